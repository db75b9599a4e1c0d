/**
 * `ccm run --provider openstack` re-reading files that misbehave. An outside review's reproductions
 * (each failed on e958b3c):
 * - RV5-1: a clouds.yaml whose read hangs (a FIFO put in its place; a hung mount in a cluster) left
 *   one of libuv's 4 threads blocked per check, until DNS and every file read in the process hung.
 *   Reloads now read without blocking and never hold more than two threads.
 * - RV5-3: `password:<pw>` (a colon for =) in cloud.conf put the password into the reload warning.
 * - RV5-5: the reload warned once per failing spell, with the first reason only.
 * - RV5-6: a rotated Secret naming a clouds-file whose read blocks froze the event loop in the
 *   synchronous build; a reload now builds only from files it has read beforehand.
 * - RV5-2: in a clouds.yaml search path, a first candidate created after the start was never noticed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { closeSync, constants, linkSync, mkdirSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { cloudsYaml, putSecret } from '../helpers/kube-secrets.js';
import { type InProcess, untilInitialised } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

const world = useCloudWorld('openstack');
let ccm: InProcess | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p.then(() => true), sleep(ms).then(() => false)]);

const clouds = (password: string) => cloudsYaml(world.sim.authUrl, 'rv5', password);

const putConf = (name: string, conf: string) => putSecret(world.api, name, { 'cloud.conf': conf });

const triedPassword = (pw: string) =>
  world.sim.requests.some((r) => JSON.stringify(r.body ?? '').includes(pw));

describe('RV5-1: a config file whose read would hang', () => {
  it('after the mount recovers, the rotation is applied and the thread pool still works', async () => {
    const dir = tempDir('ccm-rv5-1-');
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, clouds('passw0rd'));
    await putConf('rv5-1', `[Global]\nuse-clouds=true\nclouds-file=${file}\ncloud=rv5\n`);
    world.sim.addServer({ name: 'rv5-1-a', addresses: { private: [{ addr: '10.0.0.71' }] } });
    ccm = await world.run({ credentialsSecret: 'kube-system/rv5-1' });
    await createNodes(world.api, [{ name: 'rv5-1-a' }]);
    await untilInitialised(world.api, 'rv5-1-a');

    const fifo = join(dir, 'hang.fifo');
    execFileSync('mkfifo', [fifo]);
    linkSync(fifo, join(dir, 'hang.link'));
    renameSync(join(dir, 'hang.link'), file);
    await sleep(12_000); // more than one reload deadline
    // The mount recovers: a plain clouds.yaml with the rotated password.
    writeFileSync(join(dir, 'new.yaml'), clouds('rotated-rv5-1'));
    renameSync(join(dir, 'new.yaml'), file);
    let reloaded = false;
    for (let i = 0; i < 75 && !reloaded; i++) {
      await sleep(200);
      reloaded = ccm.logs.some((l) => l.includes('changed; using them from now on'));
    }
    // Anything else in the process that needs the libuv pool.
    const fsWorks = await within(
      readFile(join(dir, 'new.yaml')).catch(() => undefined),
      3000,
    );
    const dnsWorks = await within(
      lookup('localhost').catch(() => undefined),
      3000,
    );
    const timeouts = ccm.logs.filter((l) => l.includes('could not be read within')).length;
    const used = triedPassword('rotated-rv5-1');
    // Release the hung opens (a writer opens the FIFO) so the pool threads come back.
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {}
    expect({ reloaded, used, fsWorks, dnsWorks }, `timeout warnings: ${timeouts}`).toEqual({
      reloaded: true,
      used: true,
      fsWorks: true,
      dnsWorks: true,
    });
    await ccm.stop();
    ccm = undefined;
  }, 120_000);
});

describe('RV5-2: clouds.yaml search path, the first candidate created later', () => {
  it('OS_CLIENT_CONFIG_FILE absent at start (fallback ~/.config/openstack/clouds.yaml used), created later: applied', async () => {
    const home = tempDir('ccm-rv5-2-home-');
    mkdirSync(join(home, '.config', 'openstack'), { recursive: true });
    const fallback = join(home, '.config', 'openstack', 'clouds.yaml');
    writeFileSync(fallback, clouds('passw0rd'));
    const first = join(tempDir('ccm-rv5-2-'), 'clouds.yaml');
    await putConf('rv5-2', '[Global]\nuse-clouds=true\ncloud=rv5\n');
    const savedHome = process.env.HOME;
    process.env.HOME = home; // os.homedir() reads HOME
    try {
      ccm = await world.run({
        credentialsSecret: 'kube-system/rv5-2',
        env: { OS_CLIENT_CONFIG_FILE: first },
      });
      // The operator now provides the file OS_CLIENT_CONFIG_FILE names, with the new password.
      writeFileSync(first, clouds('rotated-rv5-2'));
      await sleep(3000); // 10 reload periods
      const reloaded = ccm.logs.some((l) => l.includes('changed; using them from now on'));
      expect({ reloaded, used: triedPassword('rotated-rv5-2') }).toEqual({ reloaded: true, used: true });
      await ccm.stop();
      ccm = undefined;
    } finally {
      process.env.HOME = savedHome;
    }
  }, 60_000);
});

describe('RV5-3 (end to end): a rotated cloud.conf with a colon for =', () => {
  it('the reload warning does not carry the password', async () => {
    const conf = (pw: string, sep: string) =>
      `[Global]\nauth-url=${world.sim.authUrl}\nusername=admin\npassword${sep}${pw}\ndomain-id=default\nregion=RegionOne\n`;
    await putConf('rv5-3', conf('passw0rd', '='));
    ccm = await world.run({ credentialsSecret: 'kube-system/rv5-3' });
    await putConf('rv5-3', conf('kq83secretpw', ':'));
    await sleep(2000);
    const leaked = ccm.logs.filter((l) => l.toLowerCase().includes('kq83secretpw'));
    expect(leaked, leaked.join('\n')).toEqual([]);
    await ccm.stop();
    ccm = undefined;
  }, 60_000);
});

describe('RV5-5: the reason of a failing reload changes', () => {
  it('the new reason is logged', async () => {
    const good = `[Global]\nauth-url=${world.sim.authUrl}\nusername=admin\npassword=passw0rd\ndomain-id=default\nregion=RegionOne\n`;
    await putConf('rv5-5', good);
    ccm = await world.run({ credentialsSecret: 'kube-system/rv5-5' });
    // First problem: a section ccm does not know.
    await putConf('rv5-5', `${good}[Foo]\nbar=1\n`);
    await sleep(1500);
    // The operator removes it, and breaks something else: the password is gone.
    await putConf('rv5-5', good.replace('password=passw0rd\n', ''));
    await sleep(1500);
    const warnings = ccm.logs.filter((l) => l.includes('keeping the current ones'));
    expect(
      {
        first: warnings.some((w) => w.includes('[Foo]')),
        second: warnings.some((w) => w.includes('password')),
      },
      warnings.join('\n'),
    ).toEqual({ first: true, second: true });
    await ccm.stop();
    ccm = undefined;
  }, 60_000);
});

describe('RV5-6: a rotated Secret names a clouds-file whose read blocks for 5 s', () => {
  it('the event loop keeps turning (the reload is bounded by its 10 s deadline)', async () => {
    const dir = tempDir('ccm-rv5-6-');
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, clouds('passw0rd'));
    const conf = (f: string) => `[Global]\nuse-clouds=true\nclouds-file=${f}\ncloud=rv5\n`;
    await putConf('rv5-6', conf(file));
    ccm = await world.run({ credentialsSecret: 'kube-system/rv5-6' });
    const fifo = join(dir, 'slow.fifo');
    execFileSync('mkfifo', [fifo]);
    // The hung mount answers after 5 s (a writer opens the FIFO and writes the file).
    const writer = spawn('sh', ['-c', `sleep 5; cat > ${fifo}`], { stdio: ['pipe', 'ignore', 'ignore'] });
    writer.stdin.end(clouds('rotated-rv5-6'));
    await putConf('rv5-6', conf(fifo));
    let last = Date.now();
    let worst = 0;
    const tick = setInterval(() => {
      const now = Date.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 50);
    await sleep(8000);
    clearInterval(tick);
    writer.kill();
    expect(worst, `the event loop stood still for ${worst} ms`).toBeLessThan(1000);
    await ccm.stop();
    ccm = undefined;
  }, 60_000);
});
