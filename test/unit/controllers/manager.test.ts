import { describe, expect, it } from 'vitest';
import { controllerNames, registerSlot, selectControllers } from '../../../src/controllers/manager.js';

describe('--controllers', () => {
  it('knows the upstream names', () => {
    expect(controllerNames()).toEqual(['cloud-node', 'cloud-node-lifecycle', 'service', 'route']);
  });
  it('* is every controller', () => {
    expect(selectControllers('*')).toEqual({
      enabled: ['cloud-node', 'cloud-node-lifecycle', 'service', 'route'],
      unavailable: [],
    });
  });
  it('-name disables one', () => {
    expect(selectControllers('*,-cloud-node-lifecycle').enabled).toEqual(['cloud-node', 'service', 'route']);
    expect(selectControllers('-cloud-node,*,-service,-route').enabled).toEqual(['cloud-node-lifecycle']);
  });
  it('only -name items mean every controller but those, as the help reads', () => {
    expect(selectControllers('-route').enabled).toEqual(['cloud-node', 'cloud-node-lifecycle', 'service']);
    expect(selectControllers('-route,-service').enabled).toEqual(['cloud-node', 'cloud-node-lifecycle']);
    expect(selectControllers('service,-route').enabled).toEqual(['service']);
  });
  it('an empty slot is skipped by *, and naming it says it is unavailable', () => {
    registerSlot('node-ipam');
    expect(selectControllers('*').enabled).toEqual([
      'cloud-node',
      'cloud-node-lifecycle',
      'service',
      'route',
    ]);
    expect(selectControllers('cloud-node,node-ipam')).toEqual({
      enabled: ['cloud-node'],
      unavailable: ['node-ipam'],
    });
  });
  it('an unknown name is one clear error in the flag style, with the closest name', () => {
    expect(() => selectControllers('cloud-node,routes')).toThrow(
      /^--controllers: expected a list of cloud-node, cloud-node-lifecycle, service, route[\w, -]* \(\* for all, -name for all but one\), got "routes"; did you mean route\?$/,
    );
    expect(() => selectControllers('cloud-node,servce')).toThrow(/got "servce"; did you mean service\?$/);
    expect(() => selectControllers('bogus')).toThrow(/got "bogus"$/);
  });
});
