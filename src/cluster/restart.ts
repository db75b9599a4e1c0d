/**
 * Restarting what `cluster prepare` (or its rollback) edited, and proving the new flags are live.
 *
 * kubeadm: the control plane runs as static pods, which the kubelet restarts by itself when their
 * manifest changes; only the kubelet is a systemd unit. Hard way: every component is a unit, and a
 * unit keeps its old command line until it is restarted, so /readyz alone proves nothing.
 *
 * Order: `systemctl daemon-reload` once (unit files changed), then kube-apiserver, then
 * kube-controller-manager, then the kubelet — the kubelet last, because it registers against the API
 * server and the cloud loops must already be off in the controller manager. After each restart the
 * unit's main process is read back (`systemctl show -p MainPID --value`, then /proc/<pid>/cmdline,
 * through the Host, so the same works over ssh) and every flag change must be in effect there.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { getFlag, hasFlag } from './flags.js';
import type { Component, FlagChange, Host, Layout } from './types.js';

export const RESTART_ORDER: readonly Component[] = ['kube-apiserver', 'kube-controller-manager', 'kubelet'];

export interface UnitRestart {
  component: Component;
  unit: string;
  /** Flag changes that must be in effect in the restarted process. */
  expect: FlagChange[];
}

export interface RestartOptions {
  /** How long a restarted unit may take to show a process with the new flags. Default 30 s. */
  verifyTimeoutMs?: number;
  pollMs?: number;
}

/** Whether the component runs as a systemd unit (else as a static pod, which the kubelet restarts). */
export function isUnit(layout: Layout | undefined, component: Component): boolean {
  return layout === 'hard-way' || component === 'kubelet';
}

/** Which units to restart for the edited components, in the safe order. */
export function unitsToRestart(
  layout: Layout | undefined,
  edited: ReadonlyArray<{ component: Component; changes: readonly FlagChange[] }>,
): UnitRestart[] {
  const restarts: UnitRestart[] = [];
  for (const component of RESTART_ORDER) {
    if (!isUnit(layout, component)) continue;
    const changes = edited.filter((e) => e.component === component).flatMap((e) => e.changes);
    if (changes.length === 0) continue;
    restarts.push({ component, unit: component, expect: changes });
  }
  return restarts;
}

/** Whether the command line carries the change: the last value counts, as in pflag. */
export function isLive(args: readonly string[], change: FlagChange): boolean {
  return change.value === undefined
    ? !hasFlag(args, change.flag)
    : getFlag(args, change.flag) === change.value;
}

/** "--cloud-provider=external", or "no --cloud-config" for a removal. */
export function describeChange(change: FlagChange): string {
  return change.value === undefined ? `no --${change.flag}` : `--${change.flag}=${change.value}`;
}

async function runOk(host: Host, argv: string[]): Promise<string> {
  const run = await host.run(argv);
  if (run.exitCode !== 0) {
    const why = (run.stderr || run.stdout).trim().split('\n')[0] || `exit ${run.exitCode}`;
    throw new Error(`${argv.join(' ')} failed on ${host.name}: ${why}`);
  }
  return run.stdout;
}

/** The unit's main process as systemd says (`systemctl show -p MainPID`); 0 when it has none. */
export async function mainPid(host: Host, unit: string): Promise<number> {
  const out = await runOk(host, ['systemctl', 'show', '-p', 'MainPID', '--value', unit]);
  const pid = Number.parseInt(out.trim(), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : 0;
}

/** The arguments of the unit's running main process, or a reason why there is none. */
export async function liveArgs(host: Host, unit: string): Promise<string[] | string> {
  const pid = await mainPid(host, unit);
  if (pid === 0) return `${unit} has no running process`;
  const cmdline = await host.read(`/proc/${pid}/cmdline`);
  if (!cmdline || cmdline.length === 0) return `cannot read /proc/${pid}/cmdline of ${unit}`;
  return cmdline.toString('utf8').split('\0').filter(Boolean).slice(1);
}

/** Waits until the unit's process carries every expected change. */
async function verify(host: Host, restart: UnitRestart, options: RestartOptions): Promise<void> {
  const deadline = Date.now() + (options.verifyTimeoutMs ?? 30_000);
  let problem = '';
  for (;;) {
    const args = await liveArgs(host, restart.unit);
    if (typeof args === 'string') {
      problem = args;
    } else {
      const missing = restart.expect.filter((c) => !isLive(args, c));
      if (missing.length === 0) return;
      problem = `its running process lacks ${missing.map(describeChange).join(', ')}`;
    }
    if (Date.now() >= deadline) {
      throw new Error(`${restart.unit} was restarted on ${host.name}, but ${problem}`);
    }
    await delay(options.pollMs ?? 500);
  }
}

/** daemon-reload, then each unit in order, each verified before the next. Returns the units restarted. */
export async function restartUnits(
  host: Host,
  restarts: readonly UnitRestart[],
  options: RestartOptions = {},
): Promise<string[]> {
  if (restarts.length === 0) return [];
  await runOk(host, ['systemctl', 'daemon-reload']);
  const done: string[] = [];
  for (const restart of restarts) {
    await runOk(host, ['systemctl', 'restart', restart.unit]);
    done.push(restart.unit);
    await verify(host, restart, options);
  }
  return done;
}

/**
 * What prepare and rollback do with the units their edits touched: restart them (`restart`, the
 * default of --restart) and say which, or leave them and say so in the host's notes.
 */
export async function restartOrNote(
  report: { restarted: boolean; restartedUnits: string[]; notes: string[] },
  host: Host,
  units: readonly UnitRestart[],
  restart: boolean,
  options: RestartOptions = {},
): Promise<void> {
  if (restart) {
    report.restartedUnits = await restartUnits(host, units, options);
    report.restarted = report.restartedUnits.length > 0;
  } else if (units.length > 0) {
    report.notes.push(`not restarted (--no-restart): ${units.map((u) => u.unit).join(', ')}`);
  }
}
