import { describe, expect, it } from 'vitest';
import { controllerNames, selectControllers } from '../../../src/controllers/manager.js';

describe('--controllers', () => {
  it('knows the upstream names, service as an empty slot', () => {
    expect(controllerNames()).toEqual(['cloud-node', 'cloud-node-lifecycle', 'service']);
  });
  it('* is every available controller; an empty slot is skipped silently', () => {
    expect(selectControllers('*')).toEqual({
      enabled: ['cloud-node', 'cloud-node-lifecycle'],
      unavailable: [],
    });
  });
  it('-name disables one', () => {
    expect(selectControllers('*,-cloud-node-lifecycle').enabled).toEqual(['cloud-node']);
    expect(selectControllers('-cloud-node,*').enabled).toEqual(['cloud-node-lifecycle']);
  });
  it('naming an empty slot says it is unavailable', () => {
    expect(selectControllers('cloud-node,service')).toEqual({
      enabled: ['cloud-node'],
      unavailable: ['service'],
    });
  });
  it('an unknown name is one clear error', () => {
    expect(() => selectControllers('cloud-node,route')).toThrow(
      '--controllers: unknown controller "route"; known: cloud-node, cloud-node-lifecycle, service (and * for all)',
    );
  });
});
