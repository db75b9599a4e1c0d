/**
 * Restarting what prepare edited (issue 6, item 3): on a hard-way host kube-apiserver and
 * kube-controller-manager are units too, and keep their old flags until restarted. They are restarted
 * after one daemon-reload, control plane before kubelet, and each new flag is checked in the
 * restarted process's command line.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterPrepareReport, printRollbackPreview } from '../../../src/cli/cluster-report.js';
import { render } from '../../../src/cli/output/render.js';
import { localHost } from '../../../src/cluster/host.js';
import { planClusterConfiguration } from '../../../src/cluster/plan.js';
import { applyHost, planCluster } from '../../../src/cluster/prepare.js';
import { isLive, liveArgs } from '../../../src/cluster/restart.js';
import { applyRollback, planRollback } from '../../../src/cluster/rollback.js';
import type { Detection } from '../../../src/cluster/types.js';
import type { KubeTransport } from '../../../src/kube/transport.js';
import { tempDir } from '../../helpers/tmp.js';
import { FIXTURES, systemdHost } from './support.js';

/** A process in the machine's /proc: its command line, NUL-terminated words. */
function runProcess(root: string, pid: number, argv: string[]): void {
  mkdirSync(join(root, 'proc', String(pid)), { recursive: true });
  writeFileSync(join(root, 'proc', String(pid), 'cmdline'), `${argv.join('\0')}\0`);
}

const VERSIONS = { kubelet: 'v1.32.4', apiserver: 'v1.32.4', controllerManager: 'v1.32.4' };

function machine(fixture: string, stale: string[] = [], fail: string[] = [], stop: string[] = []) {
  const root = tempDir('ccm-restart-');
  cpSync(join(FIXTURES, fixture), root, { recursive: true });
  return Object.assign(systemdHost(localHost(root), root, { stale, fail, stop }), { root });
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

describe('restarting after a rollback whose restart failed', () => {
  const FAST = { verifyTimeoutMs: 300, pollMs: 20, readyTimeoutMs: 1000 };
  // prepare added --cloud-provider: its inverse, which the restored files carry, is its absence
  const cloudProvider = { flag: 'cloud-provider', reason: 'absent before cluster prepare' };
  const terminal = { tty: false, width: 200, height: 40, colour: 0 } as const;
  const summary = async (out: Parameters<typeof clusterPrepareReport>[0]) =>
    (await render(clusterPrepareReport(out), 'table', terminal)).split('\n')[0];

  it('plans, shows and performs the start of the kubelet the failed restart left stopped; then nothing is left', async () => {
    const stop: string[] = [];
    const host = machine('kubeadm-v1.36.3', [], [], stop);
    expect((await prepare(host)).result).toBe('prepared');
    stop.push('kubelet');
    const failed = await applyRollback(await planRollback([host]), { restart: true, ...FAST });
    expect(failed.hosts[0]?.result).toBe('failed');
    expect(failed.hosts[0]?.error).toMatch(/^systemctl restart kubelet failed on local: Job for kubelet/);
    expect(await liveArgs(host, 'kubelet')).toBe('kubelet has no running process');
    stop.length = 0;

    // The re-run: every file is as before prepare, but the kubelet is stopped.
    const plan = await planRollback([host]);
    const again = plan.hosts[0] as NonNullable<(typeof plan.hosts)[0]>;
    expect(again.files).toEqual([]);
    expect(again.stale).toEqual([
      { component: 'kubelet', pid: 0, missing: expect.arrayContaining([cloudProvider]) },
    ]);
    const lines: string[] = [];
    printRollbackPreview(plan, (l) => lines.push(l));
    expect(lines.join('\n')).toContain('restart kubelet: it is not running');
    expect(lines.join('\n')).not.toContain('nothing to roll back');
    expect(await summary({ rollbackPlan: plan, dryRun: true, failed: false })).toBe(
      'Dry run: nothing written. 1 host: 1 would roll back',
    );

    const result = await applyRollback(plan, { restart: true, ...FAST });
    expect(result.hosts[0]?.error).toBeUndefined();
    expect(result.hosts[0]?.result).toBe('rolled back');
    expect(result.hosts[0]?.restartedUnits).toEqual(['kubelet']);
    const live = await liveArgs(host, 'kubelet');
    expect(Array.isArray(live) && live.some((a) => a.startsWith('--cloud-provider'))).toBe(false);
    expect(await summary({ rollbackPlan: plan, result, dryRun: false, failed: false })).toBe(
      '1 host: 1 rolled back',
    );

    // Now the kubelet runs with its files' flags: nothing more to do.
    const done = await planRollback([host]);
    expect(done.hosts[0]?.stale).toEqual([]);
    expect(await summary({ rollbackPlan: done, dryRun: false, failed: false })).toBe(
      '1 host: 1 nothing to roll back; nothing written',
    );
  });

  it("restarts a kubelet the failed restart left running with prepare's flags; fails again while it still fails", async () => {
    const fail: string[] = [];
    const host = machine('kubeadm-v1.36.3', [], fail);
    expect((await prepare(host)).result).toBe('prepared');
    fail.push('kubelet');
    expect(
      (await applyRollback(await planRollback([host]), { restart: true, ...FAST })).hosts[0]?.result,
    ).toBe('failed');

    const plan = await planRollback([host]);
    const [stale] = plan.hosts[0]?.stale ?? [];
    expect(stale).toEqual({
      component: 'kubelet',
      pid: expect.any(Number),
      missing: expect.arrayContaining([cloudProvider]),
    });
    expect(stale?.pid).toBeGreaterThan(0);
    const lines: string[] = [];
    printRollbackPreview(plan, (l) => lines.push(l));
    expect(lines.join('\n')).toContain(
      `restart kubelet: its running process (pid ${stale?.pid}) lacks no --cloud-provider`,
    );
    // systemd still fails: the host fails, so the command does not exit 0
    const still = await applyRollback(plan, { restart: true, ...FAST });
    expect(still.hosts[0]?.result).toBe('failed');
    fail.length = 0;
    const fixed = await applyRollback(await planRollback([host]), { restart: true, ...FAST });
    expect(fixed.hosts[0]?.result).toBe('rolled back');
    expect(fixed.hosts[0]?.restartedUnits).toEqual(['kubelet']);
  });

  it('--no-restart: the stopped kubelet is named, not started', async () => {
    const stop: string[] = [];
    const host = machine('kubeadm-v1.36.3', [], [], stop);
    expect((await prepare(host)).result).toBe('prepared');
    stop.push('kubelet');
    await applyRollback(await planRollback([host]), { restart: true, ...FAST });
    const plan = await planRollback([host]);
    const lines: string[] = [];
    printRollbackPreview(plan, (l) => lines.push(l), false);
    expect(lines.join('\n')).toContain('kubelet not restarted (--no-restart): it is not running');
    const result = await applyRollback(plan, { restart: false, ...FAST });
    expect(result.hosts[0]?.result).toBe('nothing to roll back');
    expect(result.hosts[0]?.notes).toEqual(['not restarted (--no-restart): kubelet']);
  });

  it('kubeadm-config is not rolled back while the host whose backup records it failed', async () => {
    const stop: string[] = [];
    const host = machine('kubeadm-v1.36.3', [], [], stop);
    const forward = await planCluster([host], { versions: VERSIONS });
    const planned = forward.hosts[0] as NonNullable<(typeof forward.hosts)[0]>;
    const before = readFileSync(join(FIXTURES, 'kubeadm-v1.36.3', 'cluster-configuration.yaml'), 'utf8');
    const edit = planClusterConfiguration(before, planned.detection as Detection);
    forward.kubeadmConfig = {
      before,
      after: edit.after,
      resourceVersion: '1',
      changes: edit.changes,
      skips: [],
    };
    expect((await applyHost(forward, planned, true, FAST)).result).toBe('prepared');
    stop.push('kubelet');

    const plan = await planRollback([host]);
    plan.kubeadmConfig = { before: edit.after, after: before, resourceVersion: '2', notes: [] };
    const requests: unknown[] = [];
    const kube = {
      request: async (r: { method: string; path: string }) => {
        requests.push(r);
        if (r.path === '/readyz') return 'ok';
        throw new Error('not expected');
      },
    } as unknown as KubeTransport;
    const result = await applyRollback(plan, { restart: true, kube, ...FAST });
    expect(result.hosts[0]?.result).toBe('failed');
    expect(result.kubeadmConfig).toMatch(
      /^not rolled back: systemctl restart kubelet failed on local: Job for kubelet\.service failed .* \(on local, whose backup records kubeadm-config\); fix that and run `ccm cluster prepare --rollback` again/,
    );
    // only /readyz was asked (the files of the control plane came back): no write of kubeadm-config
    expect(requests).toEqual([{ method: 'GET', path: '/readyz' }]);
  });
});
