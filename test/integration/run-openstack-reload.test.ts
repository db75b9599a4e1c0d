/**
 * `ccm run --provider openstack` re-reading a cloud.conf Secret and the clouds.yaml it names. An
 * outside review's reproductions (each failed on b7eebaf):
 * - R4-1: cloud.conf moved to another clouds-file and the old one deleted for good (a key removed
 *   from a mounted Secret): the reload failed on the old file and never built the new configuration.
 * - R4-2: clouds.yaml rotated while ccm started, after the provider had read it: never applied.
 * - R4-3: a clouds.yaml whose read hangs (a FIFO here; a hung mount in a cluster) stopped every
 *   later reload.
 * - R4-4: with --request-timeout 0, one Secret GET never answered stopped every later reload.
 * - R4-5: a clouds.yaml password starting with `*` reached the reload warning.
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  linkSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Provider } from '../../src/providers/types.js';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { secretReadFaultProxy } from '../helpers/kube-fault-proxy.js';
import { cloudsYaml, putSecret } from '../helpers/kube-secrets.js';
import { type InProcess, untilInitialised } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

const world = useCloudWorld('openstack');
let ccm: InProcess | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const clouds = (password: string) => cloudsYaml(world.sim.authUrl, 'r4', password);

const putConf = (name: string, conf: string) => putSecret(world.api, name, { 'cloud.conf': conf });

const triedPassword = (pw: string) =>
  world.sim.requests.some((r) => JSON.stringify(r.body ?? '').includes(pw));

describe('R4-1: cloud.conf moves to a new clouds-file and the old one is deleted for good', () => {
  const scenario = (deleteOld: boolean, secretName: string, server: string) => async () => {
    const dir = tempDir('ccm-r4-1-');
    mkdirSync(join(dir, 'v1'));
    mkdirSync(join(dir, 'v2'));
    const oldFile = join(dir, 'v1', 'clouds.yaml');
    const newFile = join(dir, 'v2', 'clouds.yaml');
    writeFileSync(oldFile, clouds('passw0rd'));
    const conf = (file: string) => `[Global]\nuse-clouds=true\nclouds-file=${file}\ncloud=r4\n`;
    await putConf(secretName, conf(oldFile));
    world.sim.addServer({ name: server, addresses: { private: [{ addr: '10.0.0.51' }] } });
    ccm = await world.run({ credentialsSecret: `kube-system/${secretName}` });
    await createNodes(world.api, [{ name: server }]);
    await untilInitialised(world.api, server);

    // The rotation: a new clouds.yaml with a new password, cloud.conf names it, the old one is gone.
    const pw = `rotated-${secretName}`;
    writeFileSync(newFile, clouds(pw));
    await putConf(secretName, conf(newFile));
    if (deleteOld) rmSync(oldFile);
    await sleep(4000); // >10 reload periods (300 ms)
    const reloaded = ccm.logs.some((l) => l.includes('changed; using them from now on'));
    const warnings = ccm.logs.filter((l) => l.includes('keeping the current ones'));
    expect(
      { reloaded, triedNew: triedPassword(pw), warnings: warnings.length },
      `warnings: ${warnings.join('\n')}`,
    ).toEqual({ reloaded: true, triedNew: true, warnings: 0 });
    await ccm.stop();
    ccm = undefined;
  };
  it(
    'control: the old file left in place, the new cloud.conf is applied',
    scenario(false, 'r4-1c', 'r4-1c-a'),
    60_000,
  );
  it(
    'the old file deleted: the new cloud.conf (naming a readable file) is applied',
    scenario(true, 'r4-1', 'r4-1-a'),
    60_000,
  );
});

describe('R4-2: clouds.yaml rotated while ccm starts', () => {
  it('a rotation after the provider was built and before the start-up hashed the files is applied', async () => {
    const dir = tempDir('ccm-r4-2-');
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, clouds('passw0rd'));
    await putConf('r4-2', `[Global]\nuse-clouds=true\nclouds-file=${file}\ncloud=r4\n`);
    let builds = 0;
    // Keystone slow to answer the start-up's token request (1.5 s): a slow or distant cloud.
    const wrapProvider = (p: Provider): Provider => {
      builds++;
      return new Proxy(p, {
        get(target, key, receiver) {
          if (key === 'verifyCredentials' && target.verifyCredentials) {
            return async (signal?: AbortSignal) => {
              await sleep(1500);
              return target.verifyCredentials?.(signal);
            };
          }
          return Reflect.get(target, key, receiver);
        },
      });
    };
    const starting = world.run({ credentialsSecret: 'kube-system/r4-2' }, { wrapProvider });
    for (let i = 0; i < 200 && builds === 0; i++) await sleep(25);
    expect(builds).toBe(1);
    writeFileSync(file, clouds('rotated-r4-2')); // the operator's rotation lands now
    ccm = await starting;
    await sleep(3000); // 10 reload periods
    expect(
      { rebuilt: builds > 1, triedNew: triedPassword('rotated-r4-2') },
      'the rotated clouds.yaml became the baseline without ever being used',
    ).toEqual({ rebuilt: true, triedNew: true });
    await ccm.stop();
    ccm = undefined;
  }, 60_000);
});

describe('R4-5 (end to end): a rotated clouds.yaml whose password starts with *', () => {
  it('the reload warning does not carry the password', async () => {
    const dir = tempDir('ccm-r4-5-');
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, clouds('passw0rd'));
    await putConf('r4-5', `[Global]\nuse-clouds=true\nclouds-file=${file}\ncloud=r4\n`);
    ccm = await world.run({ credentialsSecret: 'kube-system/r4-5' });
    // The new password, as a generator made it, written unquoted as the old one was.
    writeFileSync(file, clouds('passw0rd').replace('passw0rd', '*Kq83SecretPw'));
    await sleep(2000);
    const leaked = ccm.logs.filter((l) => l.includes('Kq83SecretPw'));
    expect(leaked, leaked.join('\n')).toEqual([]);
    await ccm.stop();
    ccm = undefined;
  }, 60_000);
});

describe('R4-3: a file read that hangs once', () => {
  it('reloads resume once the file is readable again, and the rotated password is used', async () => {
    const dir = tempDir('ccm-r4-3-');
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, clouds('passw0rd'));
    await putConf('r4-3', `[Global]\nuse-clouds=true\nclouds-file=${file}\ncloud=r4\n`);
    world.sim.addServer({ name: 'r4-3-a', addresses: { private: [{ addr: '10.0.0.61' }] } });
    ccm = await world.run({ credentialsSecret: 'kube-system/r4-3' });
    await createNodes(world.api, [{ name: 'r4-3-a' }]);
    await untilInitialised(world.api, 'r4-3-a');

    // clouds.yaml is, for a moment, a file whose read does not return (swapped in by rename).
    const fifo = join(dir, 'hang.fifo');
    execFileSync('mkfifo', [fifo]);
    linkSync(fifo, join(dir, 'hang.link'));
    renameSync(join(dir, 'hang.link'), file);
    await sleep(1000); // a reload opens it and waits
    // The mount recovers: a plain clouds.yaml again, with the rotated password.
    writeFileSync(join(dir, 'new.yaml'), clouds('rotated-r4-3'));
    renameSync(join(dir, 'new.yaml'), file);
    // The hung reload gives up after its deadline (10 s); the next one reads the new file.
    let reloaded = false;
    let used = false;
    for (let i = 0; i < 100 && !(reloaded && used); i++) {
      await sleep(200);
      reloaded = ccm.logs.some((l) => l.includes('changed; using them from now on'));
      used = triedPassword('rotated-r4-3');
    }
    // Release the hung read (a writer opens and closes the FIFO) so the worker can exit.
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {}
    expect({ reloaded, used }, 'no reload ran after the hung one').toEqual({ reloaded: true, used: true });
    await ccm.stop();
    ccm = undefined;
  }, 60_000);
});

describe('R4-4: a Secret GET that never returns, with --request-timeout 0', () => {
  const scenario = (noLimit: boolean, name: string, waitMs: number) => async () => {
    const dir = tempDir('ccm-r4-4-');
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, clouds('passw0rd'));
    const conf = (f: string) => `[Global]\nuse-clouds=true\nclouds-file=${f}\ncloud=r4\n`;
    await putConf(name, conf(file));
    const proxy = await secretReadFaultProxy(world.cp, name, 'hold');
    try {
      ccm = await world.run({
        credentialsSecret: `kube-system/${name}`,
        kubeconfig: proxy.kubeconfigPath,
        ...(noLimit ? { 'request-timeout': 0 } : {}),
      });
      await sleep(500);
      proxy.state.armed = true;
      for (let i = 0; i < 100 && proxy.state.hits === 0; i++) await sleep(50);
      expect(proxy.state.hits).toBe(1);
      // Rotation: a new clouds.yaml and cloud.conf naming it.
      const file2 = join(dir, 'clouds2.yaml');
      writeFileSync(file2, clouds(`rotated-${name}`));
      await putConf(name, conf(file2));
      await sleep(waitMs);
      const reloaded = ccm.logs.some((l) => l.includes('changed; using them from now on'));
      expect(
        { reloaded, used: triedPassword(`rotated-${name}`) },
        'one unanswered Secret GET stopped every later reload',
      ).toEqual({ reloaded: true, used: true });
    } finally {
      await proxy.close();
      await ccm?.stop();
      ccm = undefined;
    }
  };
  it(
    'control: default limits (a 10 s idle timeout on the GET), the rotation lands after it',
    scenario(false, 'r4-4c', 14_000),
    60_000,
  );
  it('a later rotation of the Secret is still applied', scenario(true, 'r4-4', 14_000), 60_000);
});
