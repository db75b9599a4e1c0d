import { describe, expect, it } from 'vitest';
import { ListStreamParser } from '../../../src/kube/list-stream.js';

const items = [
  { metadata: { name: 'a', labels: { 'x/y': 'brace } and bracket ] in a "quoted" value\\' } } },
  { metadata: { name: 'ü-ñ-☃', annotations: { items: '[{"items":[]}]' } }, spec: { taints: [{ key: 'k' }] } },
  { metadata: { name: 'c' }, status: { addresses: [], conditions: [{ type: 'Ready', status: 'True' }] } },
];
const list = {
  kind: 'NodeList',
  apiVersion: 'v1',
  other: [{ items: ['not', 'these'] }],
  metadata: { resourceVersion: '42', continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ' },
  items,
};

function parse(text: string, chunkSize: number) {
  const got: unknown[] = [];
  const parser = new ListStreamParser((item) => got.push(item));
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += chunkSize) parser.write(bytes.subarray(i, i + chunkSize));
  return { got, envelope: parser.end<typeof list>(), count: parser.items };
}

describe('ListStreamParser', () => {
  it.each([1, 2, 3, 7, 64, 1 << 20])(
    'hands over each item and keeps the envelope, in chunks of %i bytes',
    (size) => {
      const { got, envelope, count } = parse(JSON.stringify(list), size);
      expect(got).toEqual(items);
      expect(count).toBe(3);
      expect(envelope).toEqual({ ...list, items: [] });
    },
  );

  it('pretty-printed JSON, an empty list and a null list', () => {
    expect(parse(JSON.stringify(list, null, 2), 5).got).toEqual(items);
    expect(parse('{"kind":"NodeList","metadata":{},"items":[]}', 4)).toMatchObject({ got: [], count: 0 });
    expect(parse('{"kind":"NodeList","items":null}', 4).envelope).toEqual({ kind: 'NodeList', items: null });
  });

  it('a body cut off in the middle is an error, never a short list', () => {
    const text = JSON.stringify(list);
    expect(() => parse(text.slice(0, text.indexOf('"name":"c"')), 16)).toThrow(/ended in the middle/);
  });
});
