import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCloudConfig } from '../../../../src/providers/openstack/config.js';
import { createOpenStack } from '../../../../src/providers/openstack/index.js';
import { OpenStackSimulator, PASSWORD } from '../../../clouds/openstack/simulator.js';
import { selfSigned } from '../../helpers/self-signed.js';

/** [Global] ca-file and tls-insecure against the simulator served over HTTPS with a fresh certificate. */
let dir: string;
let sim: OpenStackSimulator;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ccm-os-tls-'));
  selfSigned(dir, 'ca', '127.0.0.1', 'IP:127.0.0.1');
  sim = await new OpenStackSimulator().start({
    key: readFileSync(join(dir, 'ca.key'), 'utf8'),
    cert: readFileSync(join(dir, 'ca.pem'), 'utf8'),
  });
});
afterAll(async () => {
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function verify(extra: string) {
  const config = parseCloudConfig(
    `[Global]\nauth-url=${sim.authUrl}\nregion=RegionOne\nusername=admin\npassword=${PASSWORD}\n${extra}`,
  );
  return createOpenStack(config, {}, { retries: 0 }).verifyCredentials?.();
}

describe('TLS settings of cloud.conf', () => {
  it('trusts the CA of ca-file', async () => {
    await expect(verify(`ca-file=${join(dir, 'ca.pem')}\n`)).resolves.toMatch(/^Keystone issued a token/);
  });

  it('refuses an unknown certificate without ca-file, and accepts it with tls-insecure=true', async () => {
    await expect(verify('')).rejects.toThrow(/POST \/identity\/v3\/auth\/tokens: request failed/);
    await expect(verify('tls-insecure=true\n')).resolves.toMatch(/^Keystone issued a token/);
  });

  it('names an unreadable ca-file in one line', () => {
    expect(() => verify('ca-file=/nonexistent/ca.pem\n')).toThrow(
      'cloud.conf: [Global] ca-file: cannot read /nonexistent/ca.pem (ENOENT)',
    );
  });
});
