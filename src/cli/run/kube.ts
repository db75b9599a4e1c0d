import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { type ClusterAccess, loadKubeConfig } from '../../kube/config.js';
import { KubeApiError, KubeConfigError, KubeUnreachableError } from '../../kube/errors.js';
import type { Informer } from '../../kube/informer.js';
import type { SlimNode } from '../../kube/slim-node.js';
import { KubeTransport } from '../../kube/transport.js';
import { nodeCrypto } from '../../node-modules.js';
import { transportOptionsFrom } from '../kube-flags.js';
import type { Leadership } from './leadership.js';
import type { RunInput } from './types.js';

/**
 * How long a start waits for an API server that does not answer yet (upstream: 10 s), whether it
 * refuses the connection or accepts it and says nothing; said once after WAIT_NOTICE_MS, as every
 * command says a slow API server after a second (docs/output.md).
 */
const API_SERVER_WAIT_MS = 10_000;
const WAIT_NOTICE_MS = 1000;
const PROBE = { method: 'GET', path: '/api/v1/nodes?limit=1' } as const;

/** The run's informers by resource: none until the controllers stage starts `nodes`. */
export type Informers = { nodes?: Informer<SlimNode> } & Record<string, Informer<unknown>>;

export interface KubeClient {
  /** This replica on the API server: its user agent, and its name on the Lease. */
  identity: string;
  /** Writes pass the leadership gate; an API server back from an outage wakes the Lease and `informers`. */
  transport: KubeTransport;
  informers: Informers;
}

/**
 * The Kubernetes stage of `ccm run`: the kubeconfig, an identity (the one given, else a new one), a
 * transport as that identity, and the API server answering with ccm's credentials accepted, before
 * anything else. Like the upstream
 * cloud-controller-manager (app/controllermanager.go, WaitForAPIServer), a server that does not answer
 * yet is waited for a while, then the start fails.
 */
export async function connectKube(
  input: Pick<RunInput, 'kubeconfig' | 'context' | 'env' | 'request-timeout'>,
  {
    identity: given,
    log,
    leadership,
    signal,
  }: {
    identity?: string;
    log: Logger;
    leadership: Leadership;
    /** Ends the wait (a signal during the start). */
    signal?: AbortSignal;
  },
): Promise<KubeClient> {
  const access = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  // Made only once the kubeconfig is read: a start refused before needs no node:crypto.
  const identity = given ?? newIdentity();
  const informers: Informers = {};
  let probed = false;
  const transport = new KubeTransport(access, {
    ...transportOptionsFrom(input),
    userAgent: `ccm (${identity})`,
    mayWrite: leadership.mayWrite,
    onReachable: (reachable, detail) => {
      if (!probed) return; // the start says it its own way, below
      if (reachable) {
        log.info('the Kubernetes API server answers again');
        // Back from an outage: take the Lease back and watch again now, not at the end of a backoff.
        leadership.elector?.wake();
        for (const informer of Object.values(informers)) informer.wake();
      } else
        log.warn(
          `cannot reach the Kubernetes API server at ${transport.server} (${detail}); retrying until it answers`,
        );
    },
  });
  try {
    await waitForApiServer(transport, access, log, signal);
  } catch (err) {
    await transport.close();
    throw err;
  }
  probed = true;
  return { identity, transport, informers };
}

/** The Lease holder's identity, as client-go makes it: the host name and a random suffix. */
function newIdentity(): string {
  return `${hostname()}_${nodeCrypto().randomBytes(4).toString('hex')}`;
}

async function waitForApiServer(
  transport: KubeTransport,
  access: ClusterAccess,
  log: Logger,
  stop?: AbortSignal,
): Promise<void> {
  const deadline = AbortSignal.timeout(API_SERVER_WAIT_MS);
  const signal = AbortSignal.any([deadline, ...(stop ? [stop] : [])]);
  const limit = `${API_SERVER_WAIT_MS / 1000} s`;
  let last: Error | undefined;
  const notice = setTimeout(() => {
    const why = last ? last.message : `${PROBE.method} ${PROBE.path.split('?')[0]}: no answer yet`;
    log.warn(`waiting up to ${limit} for the Kubernetes API server at ${transport.server}: ${why}`);
  }, WAIT_NOTICE_MS);
  const noAnswer = () =>
    new KubeUnreachableError(
      `cannot reach the Kubernetes API server at ${transport.server} (no answer within ${limit}); ${transport.accessHint}`,
    );
  try {
    for (;;) {
      try {
        await transport.request({ ...PROBE, signal });
        return;
      } catch (err) {
        stop?.throwIfAborted();
        if (deadline.aborted) throw noAnswer();
        if (err instanceof KubeApiError && (err.status === 401 || err.status === 403)) {
          throw new KubeConfigError(
            `the API server refused ccm's credentials (${err.message}); ${access.inCluster ? "check the Pod's ServiceAccount token" : 'check the kubeconfig user'} or ccm's RBAC`,
          );
        }
        if (!(err instanceof KubeUnreachableError)) throw err;
        last = err;
      }
      try {
        await delay(1000, undefined, { signal });
      } catch {
        stop?.throwIfAborted();
        throw last;
      }
    }
  } finally {
    clearTimeout(notice);
  }
}
