/** `ccm run`'s first stage: the flags, checked before anything is read or written (exit 2). */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../../src/cli/errors.js';
import { checkRunFlags } from '../../../../src/cli/run/flags.js';
import type { RunInput } from '../../../../src/cli/run/types.js';
import { InvalidConfigError } from '../../../../src/providers/errors.js';
import { loadProvider } from '../../../../src/providers/registry.js';
import { runInput } from '../../../helpers/run.js';

// No file is read in this stage: the kubeconfig and the inventory are never opened.
const input = (overrides: Partial<RunInput> = {}) =>
  runInput('/nonexistent/kubeconfig', '/nonexistent/inventory.yaml', overrides);

async function refusal(overrides: Partial<RunInput>): Promise<Error> {
  const err = await checkRunFlags(input(overrides), {}).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (!err) throw new Error('expected the flags to be refused');
  return err;
}

describe('checkRunFlags', () => {
  it('hands on the controllers the flag selects and the provider it names', async () => {
    const { selection, definition } = await checkRunFlags(input({ controllers: '-route' }), {});
    expect(selection).toEqual({
      enabled: ['cloud-node', 'cloud-node-lifecycle', 'service'],
      unavailable: [],
    });
    expect(definition.name).toBe('cloudlycke');
  });

  it('takes the definition a test gives instead of --provider', async () => {
    const given = await loadProvider('digitalocean');
    const { definition } = await checkRunFlags(input({ provider: undefined }), { definition: given });
    expect(definition).toBe(given);
  });

  it('refuses --plain-http on an address other machines reach', async () => {
    const err = await refusal({ plainHttp: true, bindAddress: '0.0.0.0' });
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toMatch(
      /^--plain-http serves \/metrics without authentication.*--bind-address 0\.0\.0\.0 is not a loopback address/,
    );
    await expect(checkRunFlags(input({ plainHttp: true, bindAddress: '::1' }), {})).resolves.toBeDefined();
  });

  it('refuses an unknown controller as a usage error', async () => {
    const err = await refusal({ controllers: 'cloud-node,ipam' });
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toBe(
      '--controllers: expected a list of cloud-node, cloud-node-lifecycle, service, route (* for all, -name for all but one), got "ipam"',
    );
  });

  it('checks the Lease timings only with leader election', async () => {
    const lease = {
      durationMs: 10_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2000,
      name: 'l',
      namespace: 'n',
    };
    expect((await refusal({ leaderElect: true, lease })).message).toBe(
      '--leader-elect-lease-duration must be longer than --leader-elect-renew-deadline',
    );
    expect(
      (await refusal({ leaderElect: true, lease: { ...lease, durationMs: 15_000, retryPeriodMs: 9000 } }))
        .message,
    ).toBe('--leader-elect-renew-deadline must be longer than 1.2 × --leader-elect-retry-period');
    expect(
      (
        await refusal({
          leaderElect: true,
          lease: { ...lease, durationMs: 900, renewDeadlineMs: 800, retryPeriodMs: 100 },
        })
      ).message,
    ).toBe('--leader-elect-lease-duration must be at least 1s');
    await expect(checkRunFlags(input({ leaderElect: false, lease }), {})).resolves.toBeDefined();
  });

  it('refuses a --cluster-cidr that is no CIDR', async () => {
    const base = input();
    const err = await refusal({
      controllerOptions: { ...base.controllerOptions, clusterCIDR: '10.244.0.0' },
    });
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toContain('10.244.0.0');
  });

  it('needs a provider, and knows its name', async () => {
    const none = await refusal({ provider: undefined });
    expect(none).toBeInstanceOf(UsageError);
    expect(none.message).toBe(
      'no provider given; pass --provider (e.g. --provider cloudlycke) or set CCM_PROVIDER',
    );
    const unknown = await refusal({ provider: 'nimbus' });
    expect(unknown).toBeInstanceOf(InvalidConfigError);
    expect(unknown.message).toMatch(/^--provider: expected one of brightbox, .*, got "nimbus"$/);
  });

  it('refuses a --credentials-secret that is not namespace/name', async () => {
    const err = await refusal({ credentialsSecret: 'digitalocean' });
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toBe(
      '--credentials-secret: expected namespace/name (e.g. kube-system/digitalocean), got "digitalocean"',
    );
  });

  it('says the first problem in the order `ccm run` always checked them', async () => {
    const everything: Partial<RunInput> = {
      plainHttp: true,
      bindAddress: '0.0.0.0',
      controllers: 'ipam',
      provider: undefined,
      credentialsSecret: 'bad',
    };
    expect((await refusal(everything)).message).toMatch(/^--plain-http/);
    expect((await refusal({ ...everything, bindAddress: '127.0.0.1' })).message).toMatch(/^--controllers/);
    expect((await refusal({ ...everything, bindAddress: '127.0.0.1', controllers: '*' })).message).toMatch(
      /^no provider given/,
    );
    expect(
      (await refusal({ ...everything, bindAddress: '127.0.0.1', controllers: '*', provider: 'nimbus' }))
        .message,
    ).toMatch(/^--credentials-secret/);
  });
});
