/**
 * `ccm run` re-reading a rotated credentials Secret (Cloudlycke behind a token check, real
 * kube-apiserver). RV-1 and RV-3 are an outside review's reproductions (they failed on 3644dc2):
 * - RV-1: a reload read the rotated Secret, then failed on an unreadable --cloud-config; the
 *   rotation was recorded as seen and never applied.
 * - RV-3: reloads overlapped; a slow Secret read landing after the rotation brought the old token back.
 */
import { randomBytes } from 'node:crypto';
import { renameSync } from 'node:fs';
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { cloudlycke } from '../../src/providers/cloudlycke/index.js';
import { UnauthorizedError } from '../../src/providers/errors.js';
import type { Instances, ProviderDefinition } from '../../src/providers/types.js';
import { createNodes } from '../controlplane/fixtures.js';
import { CLOUDLYCKE_DEFAULTS as DEFAULTS, useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';
import { secretReadFaultProxy } from '../helpers/kube-fault-proxy.js';
import { putSecret } from '../helpers/kube-secrets.js';
import { type InProcess, until } from '../helpers/run.js';

const world = useCloudWorld('cloudlycke');
let ccm: InProcess | undefined;
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const node = (name: string): Promise<V1Node> => world.api.readNode({ name });
const tainted = async (name: string) => (await node(name)).spec?.taints?.some((t) => t.key === UNINITIALIZED);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const putToken = (name: string, token: string) => putSecret(world.api, name, { 'access-token': token });

/** Cloudlycke with a token (Secret key `access-token`); `list` sees the token it was built with. */
function withToken(
  list: (token: string | undefined, inner: Instances) => Promise<Awaited<ReturnType<Instances['list']>>>,
): ProviderDefinition {
  return {
    ...cloudlycke,
    credentials: {
      fields: [
        ...cloudlycke.credentials.fields,
        {
          key: 'token',
          description: 'API token',
          secret: true,
          required: true,
          prompt: 'password',
          env: ['TEST_TOKEN'],
          secretKey: 'access-token',
        },
      ],
    },
    create(values, deps) {
      const inner = cloudlycke.create(values, deps);
      return {
        ...inner,
        instances: { list: () => list(values.token, inner.instances), get: (id) => inner.instances.get(id) },
      };
    },
  };
}

describe('a rotated Secret and an unreadable --cloud-config in the same reload', () => {
  const scenario = (swapFile: boolean, secretName: string, nodeB: string) => async () => {
    const first = `tok-${randomBytes(12).toString('hex')}`;
    const second = `tok-${randomBytes(12).toString('hex')}`;
    let accepted = first;
    const definition = withToken(async (token, inner) => {
      if (token !== accepted) throw new UnauthorizedError('401 Unauthorized: the token was refused');
      return inner.list();
    });
    await putToken(secretName, first);
    const inventory = writeInventory([{ id: 'a' }, { id: nodeB }], DEFAULTS);
    ccm = await world.run(
      { 'cloud-config': inventory, credentialsSecret: `kube-system/${secretName}` },
      { definition },
    );
    await createNodes(world.api, [{ name: 'a' }]);
    await until('a initialised', async () => !(await tainted('a')));

    // The cloud rotates the token; the Secret is updated while the config file is being replaced.
    accepted = second;
    if (swapFile) renameSync(inventory, `${inventory}.swap`);
    await putToken(secretName, second);
    await sleep(1500); // several reload ticks (300 ms): each reads the new Secret, then fails on the file
    if (swapFile) renameSync(`${inventory}.swap`, inventory); // same content: its hash did not change
    await createNodes(world.api, [{ name: nodeB }]);
    let initialised = false;
    try {
      await until('b initialised with the rotated token', async () => !(await tainted(nodeB)), 15_000);
      initialised = true;
    } catch {}
    const changed = ccm.logs.some((l) =>
      l.includes(`credentials from Secret kube-system/${secretName} changed`),
    );
    expect(
      { initialised, reloadLogged: changed },
      'the rotated Secret was recorded as seen by the failed tick and never applied',
    ).toEqual({ initialised: true, reloadLogged: true });
  };
  it(
    'RV-1 control: the same rotation with the file readable throughout is applied',
    scenario(false, 'ccm-creds-rv1c', 'b'),
    60_000,
  );
  it(
    'RV-1: the rotated token is used once the config file is readable again',
    scenario(true, 'ccm-creds-rv1', 'c'),
    60_000,
  );
});

describe('overlapping reloads', () => {
  const SECRET = 'ccm-creds-rv3';
  it('RV-3: a slow Secret read that lands after the rotation was applied does not bring the old token back', async () => {
    const first = `tok-${randomBytes(12).toString('hex')}`;
    const second = `tok-${randomBytes(12).toString('hex')}`;
    const used: string[] = [];
    const definition = withToken(async (token, inner) => {
      used.push(token === first ? 'first' : token === second ? 'second' : '?');
      if (token !== second && used.includes('second'))
        throw new UnauthorizedError('401 Unauthorized: the token was refused');
      return inner.list();
    });
    await putToken(SECRET, first);
    const proxy = await secretReadFaultProxy(world.cp, SECRET, { delayMs: 1500 });
    try {
      ccm = await world.run(
        {
          'cloud-config': writeInventory([{ id: 'a' }], DEFAULTS),
          credentialsSecret: `kube-system/${SECRET}`,
          kubeconfig: proxy.kubeconfigPath,
        },
        { definition },
      );
      await sleep(1000);
      proxy.state.armed = true; // the next reload's read of the Secret is answered 1.5 s late
      await until('a slow read is out', async () => proxy.state.hits > 0, 5000);
      await putToken(SECRET, second);
      await sleep(2500); // fast reads see `second`; then the slow one lands with `first`
      const changes = ccm.logs.filter((l) =>
        l.includes(`credentials from Secret kube-system/${SECRET} changed`),
      );
      const afterRotation = used.slice(used.indexOf('second'));
      expect(
        { changes: changes.length, backToOld: afterRotation.includes('first') },
        `listings after the rotation used: ${afterRotation.join(',')}`,
      ).toEqual({ changes: 1, backToOld: false });
    } finally {
      await ccm?.stop();
      ccm = undefined;
      await proxy.close();
    }
  }, 60_000);
});
