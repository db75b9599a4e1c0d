import type { Logger } from 'pino';
import type { Metrics } from '../../controllers/metrics.js';
import type { Serving } from '../../controllers/server.js';
import { eventRecorder } from '../../kube/event-recorder.js';
import { LeaderElector } from '../../kube/lease.js';
import type { KubeTransport } from '../../kube/transport.js';
import { closeCloudConnections } from '../../providers/http-transport.js';
import type { Cloud } from './cloud.js';
import type { Controllers } from './controllers.js';
import type { Informers } from './kube.js';
import type { Leadership } from './leadership.js';
import type { Reloads } from './reload.js';
import type { RunHandle, RunInput, RunPhase } from './types.js';

const SHUTDOWN_BUDGET_MS = 8000;

/**
 * The lifecycle stage of `ccm run`: the controllers run while this replica leads (at once without
 * leader election), and one orderly shutdown: intake stopped, in-flight writes finished, the Lease
 * released, everything closed.
 */
export function runLifecycle(
  input: Pick<RunInput, 'leaderElect' | 'lease'>,
  {
    identity,
    log,
    leadership,
    phase,
    transport,
    informers,
    cloud,
    controllers,
    reloads,
    serving,
    metrics,
  }: {
    identity: string;
    log: Logger;
    leadership: Leadership;
    phase: RunPhase;
    transport: KubeTransport;
    informers: Informers;
    cloud: Pick<Cloud, 'stopListing'>;
    controllers: Controllers;
    reloads: Pick<Reloads, 'stop'>;
    serving: Serving | undefined;
    metrics: Metrics;
  },
): RunHandle {
  let resolveDone: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    resolveDone = resolve;
  });
  let finishing: Promise<number> | undefined;
  const finish = (code: number, releaseLease: boolean): Promise<number> => {
    finishing ??= (async () => {
      phase.current = 'stopping';
      reloads.stop();
      controllers.abort();
      cloud.stopListing();
      const bounded = <T>(p: Promise<T>, ms: number) =>
        Promise.race([p, new Promise<void>((r) => setTimeout(r, ms).unref())]);
      await bounded(controllers.stopTerm(), SHUTDOWN_BUDGET_MS - 3500);
      // What the controllers recorded is sent while this replica may still write.
      await eventRecorder(transport).flush(1000);
      leadership.elector?.stop();
      if (releaseLease) await bounded(leadership.elector?.release() ?? Promise.resolve(), 2000);
      await bounded(Promise.all(Object.values(informers).map((i) => i.stop())), 1000);
      await serving?.close();
      await transport.close().catch(() => {});
      closeCloudConnections();
      metrics.leader.set(0);
      resolveDone(code);
      return code;
    })();
    return finishing;
  };

  if (input.leaderElect) {
    const elector = new LeaderElector({
      transport,
      namespace: input.lease.namespace,
      name: input.lease.name,
      identity,
      leaseDurationMs: input.lease.durationMs,
      renewDeadlineMs: input.lease.renewDeadlineMs,
      retryPeriodMs: input.lease.retryPeriodMs,
      log,
      onStartedLeading: () => {
        leadership.leading = true;
        metrics.leader.set(1);
        controllers.startTerm();
      },
    });
    leadership.elector = elector;
    log.info({ identity }, `waiting for the leader Lease ${input.lease.namespace}/${input.lease.name}`);
    // Losing the Lease (a renewal missed its deadline: an API server outage, a paused process, a
    // stolen Lease) stops every write at once and the controllers, not the process: the replica stays
    // a candidate under the same identity, keeps its informers and is Ready as a standby.
    // It does not wait for the term's work in flight to end before it is a candidate again.
    void (async () => {
      while ((await elector.run()) === 'lost' && phase.current !== 'stopping') {
        leadership.leading = false;
        metrics.leader.set(0);
        log.error(
          `lost the leader Lease: stopped writing and the controllers; a candidate again as ${identity}`,
        );
        void controllers.stopTerm();
      }
    })();
  } else {
    controllers.startTerm();
  }

  return {
    identity,
    ...(serving ? { url: serving.url } : {}),
    metrics,
    done,
    shutdown: (reason) => {
      if (!finishing) log.info(`${reason}: shutting down`);
      return finish(0, true);
    },
    fail: (err) => {
      if (!finishing) {
        const message = err instanceof Error ? err.message : String(err);
        log.error(`unexpected error: ${message.split('\n')[0]}; shutting down`);
      }
      return finish(1, true);
    },
  };
}
