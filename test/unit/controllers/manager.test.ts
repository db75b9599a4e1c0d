import { describe, expect, it } from 'vitest';
import { controllerNames, registerSlot, selectControllers } from '../../../src/controllers/manager.js';

describe('--controllers', () => {
  it('knows the upstream names', () => {
    expect(controllerNames()).toEqual(['cloud-node', 'cloud-node-lifecycle', 'service']);
  });
  it('* is every controller', () => {
    expect(selectControllers('*')).toEqual({
      enabled: ['cloud-node', 'cloud-node-lifecycle', 'service'],
      unavailable: [],
    });
  });
  it('-name disables one', () => {
    expect(selectControllers('*,-cloud-node-lifecycle').enabled).toEqual(['cloud-node', 'service']);
    expect(selectControllers('-cloud-node,*,-service').enabled).toEqual(['cloud-node-lifecycle']);
  });
  it('an empty slot is skipped by *, and naming it says it is unavailable', () => {
    registerSlot('route');
    expect(selectControllers('*').enabled).toEqual(['cloud-node', 'cloud-node-lifecycle', 'service']);
    expect(selectControllers('cloud-node,route')).toEqual({
      enabled: ['cloud-node'],
      unavailable: ['route'],
    });
  });
  it('an unknown name is one clear error', () => {
    expect(() => selectControllers('cloud-node,routes')).toThrow(
      /^--controllers: unknown controller "routes"; known: cloud-node, cloud-node-lifecycle, service/,
    );
  });
});
