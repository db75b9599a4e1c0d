import { describe, expect, it } from 'vitest';
import { checkOfficialController, type OfficialWorkload } from '../../../src/cli/doctor-checks.js';

const now = new Date('2026-11-25T12:00:00Z');
const held = (secondsAgo: number) => ({
  holderIdentity: 'host_1234',
  leaseDurationSeconds: 15,
  renewTime: new Date(now.getTime() - secondsAgo * 1000).toISOString(),
});
const lease = (name: string, secondsAgo: number) => ({ name, info: held(secondsAgo) });
type Args = Parameters<typeof checkOfficialController>;
/** The check as doctor makes it, at `now`. */
const check = (workloads: Args[0], leases: Args[1], self: Args[2]) =>
  checkOfficialController(workloads, leases, self, now);
/** DigitalOcean's published Deployment (releases/digitalocean-cloud-controller-manager/v0.1.68.yml). */
const doDeployment = (replicas: number): OfficialWorkload => ({
  controller: 'digitalocean-cloud-controller-manager',
  kind: 'Deployment',
  namespace: 'kube-system',
  name: 'digitalocean-cloud-controller-manager',
  replicas,
});

describe('doctor: two cloud controllers at once', () => {
  it('an official Deployment with replicas beside ccm Pods: ! with the switch-over, and why the shared Lease does not save it', () => {
    const result = check([doDeployment(1)], [lease('cloud-controller-manager', 2)], {
      lease: 'cloud-controller-manager',
      running: true,
    });
    expect(result.status).toBe('warn');
    expect(result.message).toContain(
      'ccm runs beside digitalocean-cloud-controller-manager (Deployment kube-system/digitalocean-cloud-controller-manager, 1 replica)',
    );
    expect(result.message).toContain('same Lease, kube-system/cloud-controller-manager');
    expect(result.message).toContain('--leader-elect=false');
    expect(result.fix).toContain('--replicas=0');
    expect(result.fix).toContain('ccm migrate');
    expect(result.items).toEqual(['kube-system/digitalocean-cloud-controller-manager']);
  });

  it('scaled to 0: ✓, whatever ccm does', () => {
    const result = check([doDeployment(0)], [lease('cloud-controller-manager', 2)], {
      lease: 'cloud-controller-manager',
      running: true,
    });
    expect(result.status).toBe('pass');
  });

  it('two Leases held at once (ccm on its own name, the official on cloud-controller-manager): !', () => {
    const result = check([], [lease('ccm', 1), lease('cloud-controller-manager', 3)], {
      lease: 'ccm',
      running: false,
    });
    expect(result.status).toBe('warn');
    expect(result.message).toContain(
      'two controller Leases are held at once: ccm (ccm) and cloud-controller-manager',
    );
    expect(result.message).toContain('both would run');
  });

  it('a second Lease that expired long ago is no second controller: ✓', () => {
    const result = check([], [lease('ccm', 1), lease('cloud-controller-manager', 3600)], {
      lease: 'ccm',
      running: true,
    });
    expect(result.status).toBe('pass');
  });

  it('the official controller alone, ccm not running: ✓ pointing at ccm migrate', () => {
    const result = check([doDeployment(2)], [], { lease: 'cloud-controller-manager', running: false });
    expect(result).toMatchObject({ status: 'pass' });
    expect(result.message).toContain('ccm migrate');
  });

  it('before the switch (no ccm Pod), the official controller holding the shared Lease cloud-controller-manager is not "ccm runs beside"', () => {
    const result = check(
      [
        {
          controller: 'openstack-cloud-controller-manager',
          kind: 'DaemonSet',
          namespace: 'kube-system',
          name: 'openstack-cloud-controller-manager',
          replicas: 1,
        },
      ],
      [
        {
          name: 'cloud-controller-manager',
          info: {
            holderIdentity: 'control-plane-1_6f1c7c1e-openstack-cloud-controller-manager',
            leaseDurationSeconds: 15,
            renewTime: new Date(now.getTime() - 2000).toISOString(),
          },
        },
      ],
      { lease: 'cloud-controller-manager', running: false },
    );
    expect(result.message).not.toMatch(/^ccm runs beside/);
    expect(result.status).toBe('pass');
    expect(result.message).toContain('and ccm does not');
  });
});
