import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../src/kube/errors.js';
import { itemsOf } from '../../../src/kube/transport.js';

describe('itemsOf', () => {
  it("gives a list's items, and none for Go's null", () => {
    expect(itemsOf({ kind: 'NodeList', items: [1, 2] }, '/api/v1/nodes')).toEqual([1, 2]);
    expect(itemsOf({ kind: 'NodeList', items: null }, '/api/v1/nodes')).toEqual([]);
  });

  it('refuses an answer that is no list: a Status, an empty object, nothing', () => {
    for (const answer of [{ kind: 'Status', items: null }, { kind: 'Status' }, {}, undefined]) {
      expect(() => itemsOf(answer, '/api/v1/services')).toThrow(KubeApiError);
    }
    expect(() => itemsOf({ kind: 'Status' }, '/api/v1/services')).toThrow(
      'GET /api/v1/services: the answer is a Status',
    );
  });
});
