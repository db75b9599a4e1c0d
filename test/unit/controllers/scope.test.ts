/** A controller's scope in one leadership term: what it subscribed to is taken back, informers are shared. */
import { describe, expect, it } from 'vitest';
import type { ControllerContext } from '../../../src/controllers/manager.js';
import { scopedContext } from '../../../src/controllers/scope.js';
import type { Informer } from '../../../src/kube/informer.js';

/** An informer's subscription part, with a way to fire an event. */
function fakeInformer() {
  const handlers: ((obj: unknown) => void)[] = [];
  const informer = {
    on: (_event: string, handler: (obj: unknown) => void) => {
      handlers.push(handler);
      return () => handlers.splice(handlers.indexOf(handler), 1);
    },
    hasSynced: () => true,
    fire: (obj: unknown) => {
      for (const h of [...handlers]) h(obj);
    },
    handlers,
  };
  return informer as typeof informer & Informer<unknown>;
}

describe('scopedContext', () => {
  it('end() takes back every handler the controller added; informers go on and are shared with the next start', () => {
    const nodes = fakeInformer();
    const made: string[] = [];
    const informers: Record<string, Informer<unknown>> = { nodes };
    const base = {
      informers,
      informer: (options: { resource: string }) => {
        made.push(options.resource);
        informers[options.resource] = fakeInformer();
        return informers[options.resource];
      },
    } as unknown as ControllerContext;
    const term = new AbortController();
    const first = scopedContext(base, term.signal);
    const seen: string[] = [];
    first.ctx.informers.nodes.on('add', () => seen.push('first'));
    const services = first.ctx.informer({ path: '/api/v1/services', resource: 'services', slim: (o) => o });
    services.on('delete', () => seen.push('first-services'));
    expect(first.ctx.signal).toBe(term.signal);
    nodes.fire({});
    expect(seen).toEqual(['first']);
    first.end();
    nodes.fire({});
    (informers.services as ReturnType<typeof fakeInformer>).fire({});
    expect(seen).toEqual(['first']);

    const second = scopedContext(base, new AbortController().signal);
    second.ctx.informers.nodes.on('add', () => seen.push('second'));
    const again = second.ctx.informer({ path: '/api/v1/services', resource: 'services', slim: (o) => o });
    again.on('delete', () => seen.push('second-services'));
    expect(made).toEqual(['services']);
    nodes.fire({});
    (informers.services as ReturnType<typeof fakeInformer>).fire({});
    expect(seen).toEqual(['first', 'second', 'second-services']);
    expect(nodes.handlers).toHaveLength(1);
  });
});
