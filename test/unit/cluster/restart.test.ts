/**
 * Restarting what prepare edited (issue 6, item 3): on a hard-way host kube-apiserver and
 * kube-controller-manager are units too, and keep their old flags until restarted. They are restarted
 * after one daemon-reload, control plane before kubelet, and each new flag is checked in the
 * restarted process's command line.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localHost } from '../../../src/cluster/host.js';
import { applyHost, planCluster } from '../../../src/cluster/prepare.js';
import { isLive } from '../../../src/cluster/restart.js';
import { tempDir } from '../../helpers/tmp.js';
import { FIXTURES, systemdHost } from './support.js';

/** A process in the machine's /proc: its command line, NUL-terminated words. */
function runProcess(root: string, pid: number, argv: string[]): void {
  mkdirSync(join(root, 'proc', String(pid)), { recursive: true });
  writeFileSync(join(root, 'proc', String(pid), 'cmdline'), `${argv.join('\0')}\0`);
}

const VERSIONS = { kubelet: 'v1.32.4', apiserver: 'v1.32.4', controllerManager: 'v1.32.4' };

function machine(fixture: string, stale: string[] = [], fail: string[] = []) {
  const root = tempDir('ccm-restart-');
  cpSync(join(FIXTURES, fixture), root, { recursive: true });
  return Object.assign(systemdHost(localHost(root), root, { stale, fail }), { root });
}

async function prepare(host: ReturnType<typeof machine>, restart = true) {
  const plan = await planCluster([host], { versions: VERSIONS });
  const planned = plan.hosts[0];
  if (!planned || planned.error) throw new Error(planned?.error ?? 'no plan');
  return applyHost(plan, planned, restart, { verifyTimeoutMs: 300, pollMs: 20 });
}

describe('restarting after prepare', () => {
  it('hard way: daemon-reload, then kube-apiserver, kube-controller-manager, kubelet, each checked live', async () => {
    const host = machine('hard-way');
    const report = await prepare(host);
    expect(report.error).toBeUndefined();
    expect(report.result).toBe('prepared');
    expect(report.restartedUnits).toEqual(['kube-apiserver', 'kube-controller-manager', 'kubelet']);
    expect(host.systemctl).toEqual([
      ['daemon-reload'],
      ['restart', 'kube-apiserver'],
      ['show', '-p', 'MainPID', '--value', 'kube-apiserver'],
      ['restart', 'kube-controller-manager'],
      ['show', '-p', 'MainPID', '--value', 'kube-controller-manager'],
      ['restart', 'kubelet'],
      ['show', '-p', 'MainPID', '--value', 'kubelet'],
    ]);
  });

  it('fails the host, naming the unit and the flag, when a restarted unit still runs without the new flag', async () => {
    const host = machine('hard-way', ['kube-apiserver']);
    const report = await prepare(host);
    expect(report.result).toBe('failed');
    expect(report.error).toMatch(
      /^kube-apiserver was restarted on local, but its running process lacks --cloud-provider=external/,
    );
    // stopped there: the kubelet was not restarted on top of a broken control plane
    expect(host.systemctl.map((c) => c.join(' '))).not.toContain('restart kubelet');
  });

  it('kubeadm: only the kubelet is a unit (static pods restart themselves), checked live', async () => {
    const host = machine('kubeadm-v1.36.3');
    const report = await prepare(host);
    expect(report.error).toBeUndefined();
    expect(report.restartedUnits).toEqual(['kubelet']);
    expect(host.systemctl.filter((c) => c[0] === 'restart')).toEqual([['restart', 'kubelet']]);
  });

  it('with --no-restart, says which units still run the old flags', async () => {
    const host = machine('hard-way');
    const report = await prepare(host, false);
    expect(report.restartedUnits).toEqual([]);
    expect(host.systemctl).toEqual([]);
    expect(report.notes).toEqual([
      'not restarted (--no-restart): kube-apiserver, kube-controller-manager, kubelet',
    ]);
  });
});

describe('a re-run after a restart that failed: the running processes are compared with the files', () => {
  it('restarts the kubelet whose process lacks the flag its files have, though no file changes', async () => {
    const fail = ['kubelet'];
    const host = machine('kubeadm-v1.36.3', [], fail);
    const first = await prepare(host);
    expect(first.result).toBe('failed');
    expect(first.error).toMatch(
      /^systemctl restart kubelet failed on local: Job for kubelet\.service failed/,
    );

    fail.length = 0; // the operator fixed what made the restart fail
    const plan = await planCluster([host], { versions: VERSIONS });
    const again = plan.hosts[0] as NonNullable<(typeof plan.hosts)[0]>;
    expect(again.edits).toEqual([]);
    expect(again.skips.find((s) => s.component === 'kubelet')?.reason).toMatch(/^already prepared/);
    expect(again.stale).toEqual([
      {
        component: 'kubelet',
        pid: expect.any(Number),
        missing: [expect.objectContaining({ flag: 'cloud-provider', value: 'external' })],
      },
    ]);
    const report = await applyHost(plan, again, true, { verifyTimeoutMs: 300, pollMs: 20 });
    expect(report.error).toBeUndefined();
    expect(report.result).toBe('prepared');
    expect(report.restartedUnits).toEqual(['kubelet']);
    expect(host.systemctl.filter((c) => c[0] === 'restart')).toEqual([
      ['restart', 'kubelet'],
      ['restart', 'kubelet'],
    ]);

    const third = await planCluster([host], { versions: VERSIONS });
    expect(third.hosts[0]?.stale).toEqual([]);
  });

  it('starts the kubelet that the failed restart left stopped', async () => {
    const fail = ['kubelet'];
    const host = machine('kubeadm-v1.36.3', [], fail);
    expect((await prepare(host)).result).toBe('failed');
    fail.length = 0;
    const running = (await planCluster([host], { versions: VERSIONS })).hosts[0]?.stale[0]?.pid as number;
    rmSync(join(host.root, 'proc', String(running)), { recursive: true });

    const plan = await planCluster([host], { versions: VERSIONS });
    const again = plan.hosts[0] as NonNullable<(typeof plan.hosts)[0]>;
    expect(again.edits).toEqual([]);
    expect(again.stale).toEqual([
      {
        component: 'kubelet',
        pid: 0,
        missing: expect.arrayContaining([
          expect.objectContaining({ flag: 'cloud-provider', value: 'external' }),
        ]),
      },
    ]);
    const report = await applyHost(plan, again, true, { verifyTimeoutMs: 300, pollMs: 20 });
    expect(report.error).toBeUndefined();
    expect(report.restartedUnits).toEqual(['kubelet']);
  });

  it('hard way: restarts a control-plane unit whose process lacks the flag, with nothing to write', async () => {
    const host = machine('hard-way', [], ['kube-controller-manager']);
    expect((await prepare(host)).result).toBe('failed');
    // kube-apiserver was restarted with its flag; the controller manager still runs the old one
    const plan = await planCluster([host], { versions: VERSIONS });
    const again = plan.hosts[0] as NonNullable<(typeof plan.hosts)[0]>;
    expect(again.edits).toEqual([]);
    expect(again.stale.map((s) => s.component)).toEqual(['kube-controller-manager', 'kubelet']);
  });

  it("kubeadm: a static pod running without its manifest's flag gets a note (the kubelet restarts static pods), not a restart", async () => {
    const host = machine('kubeadm-v1.36.3');
    expect((await prepare(host, false)).result).toBe('prepared');
    runProcess(host.root, 4242, ['kube-controller-manager', '--leader-elect=true']);
    const plan = await planCluster([host], { versions: VERSIONS });
    const again = plan.hosts[0] as NonNullable<(typeof plan.hosts)[0]>;
    expect(again.stale.map((s) => s.component)).toEqual(['kubelet']);
    expect(again.notes).toEqual([
      "kube-controller-manager: its running process (pid 4242) lacks --cloud-provider=external, which its manifest has; the kubelet restarts a static pod when its manifest changes: check the kubelet's log (journalctl -u kubelet)",
    ]);
  });

  it('several processes of one program: not compared, and said so', async () => {
    const host = machine('kubeadm-v1.36.3');
    expect((await prepare(host, false)).result).toBe('prepared');
    const env = readFileSync(join(host.root, 'var/lib/kubelet/kubeadm-flags.env'), 'utf8');
    expect(env).toContain('--cloud-provider=external');
    runProcess(host.root, 4242, ['/usr/bin/kubelet', '--cloud-provider=external']);
    const plan = await planCluster([host], { versions: VERSIONS });
    expect(plan.hosts[0]?.stale).toEqual([]);
    expect(plan.hosts[0]?.notes).toEqual([
      expect.stringMatching(
        /^kubelet: 2 processes run here \(pids \d+, 4242\); their flags were not compared/,
      ),
    ]);
  });
});

describe('isLive', () => {
  it('reads the last value of a flag, as the component does', () => {
    const set = { flag: 'cloud-provider', value: 'external', reason: '' };
    expect(isLive(['--cloud-provider=aws', '--cloud-provider=external'], set)).toBe(true);
    expect(isLive(['--cloud-provider=external', '--cloud-provider=aws'], set)).toBe(false);
    expect(isLive(['--cloud-config=/x'], { flag: 'cloud-config', reason: '' })).toBe(false);
    expect(isLive([], { flag: 'cloud-config', reason: '' })).toBe(true);
  });
});
