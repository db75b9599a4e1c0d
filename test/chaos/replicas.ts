/**
 * The `ccm run` replicas of the chaos world: the built bin/run.js as separate processes with leader
 * election on, as a Deployment of three runs them; each one's log in a file of the run's folder,
 * its identity (the Lease's holder and its User-Agent) read from its first line, its RSS sampled.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../controlplane/harness.js';

export const LEASE = 'ccm-chaos';

/** Short but realistic: client-go's ratios (15 s / 10 s / 2 s) at about 0.4. */
export const LEASE_TIMINGS = { durationMs: 6000, renewDeadlineMs: 4000, retryPeriodMs: 1000 };

export interface Replica {
  name: string;
  child: ChildProcess;
  pid: number;
  url: string;
  logPath: string;
  startedAt: number;
  identity?: string;
  /** Ended by the run (SIGKILL): its end is no failure. */
  killed: boolean;
  /** SIGSTOPped now. */
  paused: boolean;
  exit?: { at: number; code: number | null; signal: string | null };
  /** RSS samples: [Date.now(), bytes]. */
  rss: [number, number][];
}

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

export async function startReplica(
  name: string,
  dir: string,
  kubeconfig: string,
  cloud: { args: string[]; env: Record<string, string> },
): Promise<Replica> {
  const port = await freePort();
  const logPath = join(dir, `${name}.log`);
  const log = createWriteStream(logPath);
  const child = spawn(
    process.execPath,
    [
      bin,
      'run',
      '--kubeconfig',
      kubeconfig,
      ...cloud.args,
      '--leader-elect',
      '--leader-elect-resource-name',
      LEASE,
      '--leader-elect-lease-duration',
      `${LEASE_TIMINGS.durationMs / 1000}s`,
      '--leader-elect-renew-deadline',
      `${LEASE_TIMINGS.renewDeadlineMs / 1000}s`,
      '--leader-elect-retry-period',
      `${LEASE_TIMINGS.retryPeriodMs / 1000}s`,
      // Faster than the defaults so that a quiet minute settles the churn; realistic ratios.
      '--deletion-grace-period',
      '15s',
      '--node-monitor-period',
      '2s',
      '--cloud-list-period',
      '10s',
      '--config-reload-period',
      '5s',
      '--cloud-qps',
      '5',
      '--cloud-burst',
      '10',
      '--plain-http',
      '--bind-address',
      '127.0.0.1',
      '--secure-port',
      String(port),
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, KUBECONFIG: undefined, CCM_PROVIDER: undefined, ...cloud.env },
    },
  );
  const replica: Replica = {
    name,
    child,
    pid: child.pid ?? 0,
    url: `http://127.0.0.1:${port}`,
    logPath,
    startedAt: Date.now(),
    killed: false,
    paused: false,
    rss: [],
  };
  let rest = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log.write(chunk);
    if (replica.identity) return;
    rest += chunk.toString();
    const id = /"identity":"([^"]+)"/.exec(rest)?.[1];
    if (id) replica.identity = id;
  });
  child.once('exit', (code, signal) => {
    replica.exit = { at: Date.now(), code, signal };
    log.end();
  });
  return replica;
}

/** The replica's RSS now (bytes), from /proc; undefined once it is gone. */
export function rssOf(pid: number): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** What the replica says of its role on /readyz?verbose: 'leading', 'standby', or undefined. */
export async function roleOf(replica: Replica): Promise<'leading' | 'standby' | undefined> {
  if (replica.exit || replica.paused) return undefined;
  try {
    const text = await (
      await fetch(`${replica.url}/readyz?verbose`, { signal: AbortSignal.timeout(2000) })
    ).text();
    return /leader-election ok: (leading|standby)/.exec(text)?.[1] as 'leading' | 'standby' | undefined;
  } catch {
    return undefined;
  }
}

/** The deletion hold the replica reports on /readyz?verbose (its id), if any. */
export async function holdOf(replica: Replica): Promise<string | undefined> {
  if (replica.exit || replica.paused) return undefined;
  try {
    const text = await (
      await fetch(`${replica.url}/readyz?verbose`, { signal: AbortSignal.timeout(2000) })
    ).text();
    return /deletion-brake ok: holding[^\n]*\(hold ([0-9a-f-]+)\)/.exec(text)?.[1];
  } catch {
    return undefined;
  }
}
