/**
 * A rotated cloud.conf naming a ca-file that holds no certificate (garbage, an empty file, a FIFO),
 * or holding one long line without "=": the reload refuses it, warns, keeps the provider it has, and
 * the event loop keeps turning. The official controller refuses such a CA at the build
 * (pkg/client/client.go: cert.NewPool(cfg.CAFile)). An outside review's reproductions (R13-2, R13-5,
 * R13-6; they failed on f9c36c5).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { putSecret } from '../helpers/kube-secrets.js';
import type { InProcess } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

const world = useCloudWorld('openstack');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const putConf = (name: string, conf: string) => putSecret(world.api, name, { 'cloud.conf': conf });

describe('R13-2/5: a rotated ca-file with no certificate in it', () => {
  for (const kind of ['garbage', 'fifo'] as const) {
    it(`${kind}: the reload refuses it (warns, keeps the current config)`, async () => {
      const dir = tempDir('ccm-r13-');
      const ca = join(dir, 'ca.pem');
      if (kind === 'garbage') writeFileSync(ca, 'not a certificate\n');
      else execFileSync('mkfifo', [ca]);
      const good = `[Global]\nauth-url=${world.sim.authUrl}\nusername=admin\npassword=passw0rd\ndomain-id=default\nregion=RegionOne\n`;
      await putConf(`r13-${kind}`, good);
      const ccm: InProcess = await world.run({ credentialsSecret: `kube-system/r13-${kind}` });
      try {
        await putConf(`r13-${kind}`, `${good}ca-file=${ca}\n`);
        await sleep(2000);
        const applied = ccm.logs.filter((l) => l.includes('changed; using them from now on'));
        const warned = ccm.logs.some((l) => l.includes('keeping the current ones'));
        expect({ applied: applied.length, warned }, applied.join('\n')).toEqual({ applied: 0, warned: true });
      } finally {
        await ccm.stop();
      }
    }, 60_000);
  }
});

describe('R13-6 (end to end): a rotated cloud.conf with one long line without "="', () => {
  it('the event loop keeps turning while the reload refuses it', async () => {
    const good = `[Global]\nauth-url=${world.sim.authUrl}\nusername=admin\npassword=passw0rd\ndomain-id=default\nregion=RegionOne\n`;
    await putConf('r13-long', good);
    const ccm: InProcess = await world.run({ credentialsSecret: 'kube-system/r13-long' });
    try {
      let last = Date.now();
      let worst = 0;
      const tick = setInterval(() => {
        const now = Date.now();
        worst = Math.max(worst, now - last);
        last = now;
      }, 50);
      // 100 KB: well under a Secret's 1 MiB. The change is never taken as seen, so every reload
      // period builds (and stalls) again: on f9c36c5 the loop is frozen ~3 s per period, for good.
      await putConf('r13-long', `${good}${'A'.repeat(100_000)}\n`);
      await sleep(9000);
      clearInterval(tick);
      expect(worst, `the event loop stood still for ${worst} ms`).toBeLessThan(1000);
    } finally {
      await ccm.stop();
    }
  }, 240_000);
});
