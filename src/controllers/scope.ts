import type { Informer } from '../kube/informer.js';
import type { ControllerContext } from './manager.js';

export interface Scope {
  ctx: ControllerContext;
  /** Unsubscribes every handler the controller added (informers, reloads); the informers themselves go on. */
  end(): void;
}

/**
 * One start of one controller, inside one leadership term. Informers outlive terms (a standby keeps
 * them synced, and a replica that leads again needs no relist), so what a controller subscribes to is
 * taken back by `end()`, and an informer it asks for that an earlier term started is shared rather than
 * started twice. `signal` ends with the term.
 */
export function scopedContext(base: ControllerContext, signal: AbortSignal): Scope {
  const subscriptions: (() => void)[] = [];
  const scoped = <T>(informer: Informer<T>): Informer<T> =>
    Object.assign(Object.create(informer) as Informer<T>, {
      on(event: 'add', handler: (...args: never[]) => void) {
        const off = informer.on(event, handler as (obj: T) => void);
        subscriptions.push(off);
        return off;
      },
    });
  const informers = new Proxy(base.informers, {
    get: (target, key) => {
      const informer = Reflect.get(target, key) as Informer<unknown> | undefined;
      return informer && scoped(informer);
    },
  });
  const ctx: ControllerContext = {
    ...base,
    informers,
    informer: (options) => {
      const running = base.informers[options.resource] as Informer<never> | undefined;
      return scoped(running ?? base.informer(options));
    },
    signal,
    ...(base.onReload
      ? {
          onReload: (listener: () => void) => {
            const off = (base.onReload as NonNullable<ControllerContext['onReload']>)(listener);
            subscriptions.push(off);
            return off;
          },
        }
      : {}),
  };
  return {
    ctx,
    end: () => {
      for (const off of subscriptions.splice(0)) off();
    },
  };
}
