/**
 * A doctor fix that is a ccm command is copied whole: the provider, and the --credentials-secret and
 * --cloud-api-url doctor was given (secret create's "Next:" names them too), except a plain-http URL
 * in `ccm manifests`, which refuses it; then the fix says why it is not there.
 */
import { describe, expect, it } from 'vitest';
import { resultOf } from '../../../src/cli/doctor.js';
import { checkLease } from '../../../src/cli/doctor-checks.js';

const ref = { namespace: 'kube-system', name: 'cloud-controller-manager' };
const now = new Date('2026-01-01T00:00:00Z');
const official = {
  id: 'official-controller',
  status: 'warn' as const,
  message: 'the official controller runs',
  fix: 'scale it to 0, then `ccm migrate --provider <cloud>` hands its load balancers to ccm',
};

describe('ccm doctor: the fixes name what was given', () => {
  it('an https --cloud-api-url and --credentials-secret reach `ccm manifests` and `ccm migrate`', () => {
    const { checks } = resultOf([checkLease(undefined, ref, now), official], 'digitalocean', {
      'cloud-api-url': 'https://api.example.com',
      'credentials-secret': 'ops/do-token',
    });
    expect(checks[0]?.fix).toBe(
      'deploy a cloud controller: `ccm manifests --provider digitalocean --credentials-secret ops/do-token --cloud-api-url https://api.example.com --image <registry>/ccm:<version> | kubectl apply --server-side -f -`',
    );
    expect(checks[1]?.fix).toContain(
      '`ccm migrate --provider digitalocean --credentials-secret ops/do-token --cloud-api-url https://api.example.com`',
    );
  });

  it('a plain-http one: in `ccm migrate`, which runs here; left out of `ccm manifests`, with why', () => {
    const { checks } = resultOf([checkLease(undefined, ref, now), official], 'digitalocean', {
      'cloud-api-url': 'http://127.0.0.1:36755',
    });
    expect(checks[0]?.fix).toBe(
      "deploy a cloud controller: `ccm manifests --provider digitalocean --image <registry>/ccm:<version> | kubectl apply --server-side -f -` (with the cloud's https URL: ccm manifests refuses the plain-http --cloud-api-url http://127.0.0.1:36755, which its pods would send the token over unencrypted)",
    );
    expect(checks[1]?.fix).toContain(
      '`ccm migrate --provider digitalocean --cloud-api-url http://127.0.0.1:36755`',
    );
  });

  it('the DaemonSet applied: the Lease check does not say to deploy it again', () => {
    const daemonSet = { kind: 'DaemonSet' as const, namespace: 'kube-system', name: 'ccm' };
    for (const lease of [undefined, { leaseDurationSeconds: 15 }]) {
      const check = checkLease(lease, ref, now, daemonSet);
      expect(check.status).toBe('fail');
      expect(check.fix).toMatch(/^DaemonSet kube-system\/ccm is applied, but none of its Pods leads: /);
      expect(check.fix).not.toContain('deploy');
    }
  });
});
