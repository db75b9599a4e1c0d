import { readFile } from 'node:fs/promises';
import { delegatedAuth } from '../../controllers/delegated-auth.js';
import type { HoldStatus } from '../../controllers/deletion-guard.js';
import type { Metrics } from '../../controllers/metrics.js';
import { type Check, type Serving, serve } from '../../controllers/server.js';
import type { KubeTransport } from '../../kube/transport.js';
import { UsageError } from '../errors.js';
import type { Cloud } from './cloud.js';
import type { Informers } from './kube.js';
import type { Leadership } from './leadership.js';
import type { RunInput, RunPhase } from './types.js';

/** What readiness looks at, each read at every probe. */
export interface ReadinessSources {
  informers: Informers;
  cloud: Pick<Cloud, 'credentialsAccepted'> & Partial<Pick<Cloud, 'credentialsRefusal'>>;
  leadership: Leadership;
  phase: RunPhase;
  /** Set by the lifecycle controller while this replica leads and holds deletions. */
  deletionHold: HoldStatus;
}

/** /readyz: the informers synced, the credentials accepted, the replica's role, a deletion hold (a note), and not shutting down. */
export function readinessChecks({
  informers,
  cloud,
  leadership,
  phase,
  deletionHold,
}: ReadinessSources): Check[] {
  return [
    {
      name: 'informer-sync',
      run: () => {
        const pending = Object.entries(informers)
          .filter(([, i]) => !i.hasSynced())
          .map(([n]) => n);
        if (!informers.nodes) pending.unshift('nodes');
        return pending.length ? { ok: false, detail: `waiting for ${pending.join(', ')}` } : { ok: true };
      },
    },
    {
      name: 'cloud',
      run: () =>
        cloud.credentialsAccepted()
          ? { ok: true }
          : {
              ok: false,
              detail: cloud.credentialsRefusal?.() ?? 'waiting for the cloud to accept the credentials',
            },
    },
    {
      name: 'leader-election',
      run: () =>
        !leadership.elect
          ? { ok: true, detail: 'disabled' }
          : leadership.leading
            ? { ok: true, detail: 'leading' }
            : {
                ok: true,
                detail: `standby${leadership.elector?.holder ? ` (leader: ${leadership.elector.holder})` : ''}`,
              },
    },
    {
      // A note, never a failure: a held deletion needs a person, not a restart.
      name: 'deletion-brake',
      run: () => {
        const hold = deletionHold.current;
        return hold
          ? {
              ok: true,
              detail: `holding the deletion of ${hold.count} Nodes (hold ${hold.id}): ${hold.reason}; release: ${hold.release}`,
            }
          : { ok: true };
      },
    },
    {
      name: 'shutdown',
      run: () => (phase.current === 'stopping' ? { ok: false, detail: 'shutting down' } : { ok: true }),
    },
  ];
}

/**
 * The server stage of `ccm run`: /healthz, /readyz and /metrics, served from the start (readiness
 * waits for the caches), over HTTPS for tokens the API server accepts unless --plain-http. Nothing is
 * served with --secure-port -1.
 */
export async function serveHealth(
  input: Pick<RunInput, 'securePort' | 'bindAddress' | 'plainHttp' | 'alwaysAllowPaths' | 'tls'>,
  { transport, metrics, ...readiness }: ReadinessSources & { transport: KubeTransport; metrics: Metrics },
): Promise<Serving | undefined> {
  metrics.leader.set(readiness.leadership.leading ? 1 : 0);
  if (input.securePort < 0) return undefined;
  const tls = input.tls
    ? { cert: await readFile(input.tls.certFile, 'utf8'), key: await readFile(input.tls.keyFile, 'utf8') }
    : undefined;
  let serving: Serving;
  try {
    serving = await serve({
      bindAddress: input.bindAddress,
      port: input.securePort,
      plain: input.plainHttp,
      ...(tls ? { tls } : {}),
      ...(input.plainHttp
        ? {}
        : { authorize: delegatedAuth({ transport, alwaysAllowPaths: input.alwaysAllowPaths }) }),
      registry: metrics.registry,
      healthz: [{ name: 'ping', run: () => ({ ok: true }) }],
      readyz: readinessChecks(readiness),
    });
  } catch (err) {
    throw new UsageError(
      `cannot serve on ${input.bindAddress}:${input.securePort} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); pick another --secure-port or --bind-address`,
    );
  }
  return serving;
}
