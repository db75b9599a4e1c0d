/**
 * Restarting what prepare edited (issue 6, item 3): on a hard-way host kube-apiserver and
 * kube-controller-manager are units too, and keep their old flags until restarted. They are restarted
 * after one daemon-reload, control plane before kubelet, and each new flag is checked in the
 * restarted process's command line.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localHost } from '../../../src/cluster/host.js';
import { applyHost, planCluster } from '../../../src/cluster/prepare.js';
import { isLive } from '../../../src/cluster/restart.js';
import { tempDir } from '../../helpers/tmp.js';
import { FIXTURES, systemdHost } from './support.js';

const VERSIONS = { kubelet: 'v1.32.4', apiserver: 'v1.32.4', controllerManager: 'v1.32.4' };

function machine(fixture: string, stale: string[] = []) {
  const root = tempDir('ccm-restart-');
  cpSync(join(FIXTURES, fixture), root, { recursive: true });
  return systemdHost(localHost(root), root, { stale });
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

describe('isLive', () => {
  it('reads the last value of a flag, as the component does', () => {
    const set = { flag: 'cloud-provider', value: 'external', reason: '' };
    expect(isLive(['--cloud-provider=aws', '--cloud-provider=external'], set)).toBe(true);
    expect(isLive(['--cloud-provider=external', '--cloud-provider=aws'], set)).toBe(false);
    expect(isLive(['--cloud-config=/x'], { flag: 'cloud-config', reason: '' })).toBe(false);
    expect(isLive([], { flag: 'cloud-config', reason: '' })).toBe(true);
  });
});
