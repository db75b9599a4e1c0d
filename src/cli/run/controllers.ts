import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { HoldStatus } from '../../controllers/deletion-guard.js';
import {
  type Controller,
  type ControllerContext,
  type ControllerLoader,
  type ControllerOptions,
  controllerLoader,
  type Selection,
} from '../../controllers/manager.js';
import type { Metrics } from '../../controllers/metrics.js';
import { scopedContext } from '../../controllers/scope.js';
import { createInformer, type Informer, type InformerOptions } from '../../kube/informer.js';
import { createNodeClient } from '../../kube/nodes.js';
import { slimNode } from '../../kube/slim-node.js';
import type { KubeTransport } from '../../kube/transport.js';
import type { SecretRef } from '../provider-config.js';
import type { Cloud } from './cloud.js';
import type { Informers } from './kube.js';

export interface Controllers {
  /** Starts a leadership term: the selected controllers, once Nodes are synced and the last term's stopped. */
  startTerm(): void;
  /** Ends the current term: its controllers stopped and their in-flight work finished. */
  stopTerm(): Promise<void>;
  /** Ends the controllers' signal for good (the shutdown). */
  abort(): void;
}

/**
 * The controllers stage of `ccm run`: the Nodes informer started (a standby keeps it synced too), and
 * the selected controllers ready to run in leadership terms, which the lifecycle stage starts and ends.
 */
export function startControllers({
  selection,
  options,
  transport,
  informers,
  cloud,
  metrics,
  log,
  credentialsSecret,
  deletionHold,
}: {
  selection: Selection;
  options: ControllerOptions;
  transport: KubeTransport;
  /** Filled here: `nodes`, then what the controllers ask for. */
  informers: Informers;
  cloud: Pick<Cloud, 'provider' | 'budget' | 'cache'> & Partial<Pick<Cloud, 'onReload'>>;
  metrics: Metrics;
  log: Logger;
  /** The Secret whose ccm.io/allow-mass-deletion annotation releases a held deletion. */
  credentialsSecret?: SecretRef;
  /** Where the lifecycle controller says a deletion hold, for /readyz. */
  deletionHold: HoldStatus;
}): Controllers {
  const makeInformer = <T>(informerOptions: Omit<InformerOptions<T>, 'transport'>): Informer<T> => {
    const informer = createInformer<T>({
      transport,
      log,
      onRestart: (reason) => metrics.watchRestarts.inc({ resource: informerOptions.resource, reason }),
      ...informerOptions,
    });
    informers[informerOptions.resource] = informer as Informer<unknown>;
    informer.start();
    return informer;
  };
  const nodes = makeInformer({ path: '/api/v1/nodes', resource: 'nodes', slim: slimNode });
  const countNodes = () => metrics.cachedNodes.set(nodes.size);
  nodes.on('add', countNodes);
  nodes.on('delete', countNodes);

  const stopper = new AbortController();
  for (const name of selection.unavailable) {
    log.warn(`controller "${name}" is not available in this build of ccm; running without it`);
  }
  const ctx: ControllerContext = {
    transport,
    kube: createNodeClient(transport),
    provider: cloud.provider,
    budget: cloud.budget,
    cloud: cloud.cache,
    ...(cloud.onReload ? { onReload: cloud.onReload } : {}),
    informers: informers as ControllerContext['informers'],
    informer: makeInformer,
    log,
    metrics,
    options,
    signal: stopper.signal,
    ...(credentialsSecret ? { credentialsSecret } : {}),
    deletionHold,
  };
  // A leadership term: the controllers started when this replica became leader, stopped when it
  // stops leading (a lost Lease, or shutdown); a replica that leads again starts a new term.
  interface Term {
    stopper: AbortController;
    running: { controller: Controller; end(): void }[];
    started: Promise<void>;
    stopped?: Promise<void>;
  }
  let term: Term | undefined;
  const startTerm = () => {
    // The last term's work in flight (a cloud call, a request without an answer) may still be ending:
    // its controllers are not started twice, and writes pass the gate again only while leading.
    const previous = term?.stopped ?? Promise.resolve();
    const t: Term = { stopper: new AbortController(), running: [], started: Promise.resolve() };
    term = t;
    const { signal } = t.stopper;
    t.started = (async () => {
      await previous;
      while (!nodes.hasSynced()) {
        if (signal.aborted) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const name of selection.enabled) {
        const factory = await (controllerLoader(name) as ControllerLoader)();
        // A start that fails (e.g. the API server answers 503 as the replica takes over) is tried again
        // with backoff while the term lasts: never an unhandled rejection, never an exit.
        let failure: string | undefined;
        for (let waitMs = 1000; !signal.aborted; waitMs = Math.min(waitMs * 2, 30_000)) {
          const controller = factory();
          const scope = scopedContext(ctx, signal);
          const entry = { controller, end: scope.end };
          t.running.push(entry);
          try {
            await controller.start(scope.ctx);
            if (signal.aborted) break;
            log.info({ controller: name }, failure ? 'started after all' : 'started');
            break;
          } catch (err) {
            t.running.splice(t.running.indexOf(entry), 1);
            await controller.stop().catch(() => {});
            scope.end();
            const message = (err as Error).message;
            log[message === failure ? 'debug' : 'warn'](
              { controller: name },
              `could not start: ${message}; trying again with backoff (${Math.round(waitMs / 1000)} s)`,
            );
            failure = message;
            await delay(waitMs, undefined, { signal }).catch(() => {});
          }
        }
      }
    })();
  };
  const stopTerm = (): Promise<void> => {
    const t = term;
    if (!t) return Promise.resolve();
    t.stopped ??= (async () => {
      t.stopper.abort();
      await t.started;
      await Promise.all(
        t.running.splice(0).map(async ({ controller, end }) => {
          await controller.stop();
          end();
        }),
      );
    })();
    return t.stopped;
  };
  return { startTerm, stopTerm, abort: () => stopper.abort() };
}
