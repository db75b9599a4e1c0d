/**
 * `ccm run`'s reload and the OpenStack files it reads: an outside review's reproductions (R13-1..6;
 * they failed on f9c36c5). A file of any size; a CA or key that does not parse (checked at the build
 * now, as the official controller does); a clouds.yaml that cannot be read for a moment (ccm keeps to
 * it instead of the next in the search path); values never quoted in clouds.yaml errors; a FIFO as
 * ca-file; a line of 100 KB with no `=` (no edit distance for it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { filesReadBy, readConfigFile, readConfigFileNow } from '../../../../src/providers/config-files.js';
import { cloudsYamlGlobal } from '../../../../src/providers/openstack/clouds-yaml.js';
import { parseCloudConfig } from '../../../../src/providers/openstack/config.js';
import { createOpenStack } from '../../../../src/providers/openstack/index.js';

const dir = mkdtempSync(join(tmpdir(), 'review13-'));
const P = 'Kq83SecretPw';
const messageOf = (f: () => unknown) => {
  try {
    f();
    return '';
  } catch (err) {
    return (err as Error).message;
  }
};

describe('R13-1: a file of any size (/dev/zero named as ca-file)', () => {
  it("is refused after 4 MiB, by the reload's read and by the build's", async () => {
    await expect(readConfigFileNow('/dev/zero')).rejects.toMatchObject({ code: 'EFBIG' });
    expect(() => readConfigFile('/dev/zero')).toThrow(/larger than 4 MiB/);
  });
});

describe('R13-2: a CA or client key that does not parse is accepted by the build, so a reload applies it', () => {
  // tlsTransport reads ca-file/cert-file/key-file but createSecureContext runs at the first HTTPS
  // request (http-transport.ts agentFor). A reload's build "succeeds", the change is taken as seen and
  // logged "using them from now on", and every later cloud call fails; the reload never warns again.
  // cloud-provider-openstack pkg/client/client.go NewOpenStackClient: cert.NewPool(cfg.CAFile) and
  // tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile) fail the build.
  const conf = (extra: string) =>
    `[Global]\nauth-url=https://keystone.example.com:5000/v3\nusername=admin\npassword=pw\ntenant-id=p\n${extra}`;
  it('a ca-file holding no certificate fails the build', () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, 'this is not a certificate\n');
    expect(() => filesReadBy(() => createOpenStack(parseCloudConfig(conf(`ca-file=${ca}\n`)), {}))).toThrow();
  });
  it('a cert-file and key-file that do not match (rotated one at a time) fail the build', () => {
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    writeFileSync(cert, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    writeFileSync(key, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n');
    expect(() =>
      filesReadBy(() => createOpenStack(parseCloudConfig(conf(`cert-file=${cert}\nkey-file=${key}\n`)), {})),
    ).toThrow();
  });
});

describe('R13-3: clouds.yaml values still quoted in errors (the RV5-4 fix covers auth only)', () => {
  const write = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  it('a bare value in a clouds flow mapping is listed as a cloud name', () => {
    const file = write('c1.yaml', `clouds: {a: {auth: {auth_url: "https://k/v3", username: u}}, ${P}}\n`);
    expect(messageOf(() => cloudsYamlGlobal([file], undefined))).not.toContain(P);
  });
  it('a password pasted under auth_type is quoted', () => {
    const file = write('c2.yaml', `clouds:\n  a:\n    auth_type: ${P}\n`);
    expect(messageOf(() => cloudsYamlGlobal([file], 'a'))).not.toContain(P);
  });
});

describe('R13-4: a reload that cannot read the clouds.yaml in use builds from the next candidate and applies it', () => {
  // check() compares each file the provider read; readNow returns an Error for any failure, including
  // its own "earlier reads have not returned" (two reads hung) or EIO/ESTALE of a dead mount. The file
  // counts as changed, the build gets the Error, and cloudsYamlGlobal treats every read error as
  // "not there" and takes the next file: a provider for another cloud/account is built, applied and
  // logged as "... changed; using them from now on". gophercloud utils (which the official
  // controller uses) falls back only when the file does not exist (os.Stat), and fails on a read error.
  it('OS_CLIENT_CONFIG_FILE unreadable for a moment: the build must fail, not use /etc/openstack/clouds.yaml', () => {
    const mine = join(dir, 'mine.yaml');
    const given = new Map<string, string | Error>([
      [mine, new Error('earlier reads have not returned (a hung mount?)')],
    ]);
    for (const other of [
      join(process.env.HOME ?? '/root', '.config', 'openstack', 'clouds.yaml'),
      '/etc/openstack/clouds.yaml',
    ]) {
      given.set(
        other,
        `clouds:\n  prod:\n    auth: {auth_url: "https://other.example.com/v3", username: other, password: x, project_id: p}\n`,
      );
    }
    const conf = `[Global]\nuse-clouds=true\ncloud=prod\n`;
    let built: ReturnType<typeof parseCloudConfig> | undefined;
    try {
      built = filesReadBy(
        () =>
          parseCloudConfig(conf, 'cloud.conf', {
            cloudsFiles: [mine, ...given.keys()].filter((f, i, a) => a.indexOf(f) === i),
          }),
        given,
      ).value;
    } catch {
      built = undefined;
    }
    // f9c36c5: built, with the other file's auth-url and user.
    expect(built?.global).toBeUndefined();
  });
});

describe('R13-5: a FIFO or an empty file as ca-file is read as "" and the CA is silently dropped', () => {
  // readNow opens with O_NONBLOCK: a FIFO with no writer reads as "" at once. tlsTransport keeps the CA
  // only when truthy, so the reload builds a provider that trusts the system CAs instead, applies it,
  // and never warns. (At start an empty ca-file is accepted the same way.) Official controller:
  // cert.NewPool fails "data does not contain any valid RSA or ECDSA certificates".
  it('the build refuses a ca-file that holds no certificate at all', () => {
    const fifo = join(dir, 'ca.fifo');
    spawnSync('mkfifo', [fifo]);
    const given = new Map<string, string | Error>([[fifo, '']]);
    const conf = `[Global]\nauth-url=https://keystone.example.com:5000/v3\nusername=admin\npassword=pw\ntenant-id=p\nca-file=${fifo}\n`;
    expect(() => filesReadBy(() => createOpenStack(parseCloudConfig(conf), {}), given)).toThrow();
  });
});

describe('R13-6: "did you mean" runs an O(n·m) edit distance on a key of any length (new in f9c36c5)', () => {
  // closest() (src/closest.ts) builds an (n+1)×(m+1) array of arrays for the unknown key against each
  // of the 24 [Global] keys. A 100 KB line without "=" (a pasted base64 blob, a wrapped value) takes
  // ~3 s, 300 KB ~11 s, 1 MiB (a Secret's limit) ~40 s, all synchronously: at a reload the build runs
  // on the event loop, so leases, probes and the 10 s reload deadline all stand still. gcfg (the
  // official controller) reports only the position (set.go extraData{loc}).
  it('cloud.conf with a 100 KB unknown key is refused within 500 ms', () => {
    const text = `[Global]\nauth-url=https://k/v3\nusername=a\npassword=b\n${'A'.repeat(100_000)}\n`;
    const t0 = Date.now();
    expect(messageOf(() => parseCloudConfig(text))).not.toBe('');
    expect(Date.now() - t0).toBeLessThan(500);
  }, 60_000);
  it('clouds.yaml with a 100 KB unknown auth key is refused within 500 ms', () => {
    const file = join(dir, 'long.yaml');
    // An explicit key (`? `): an implicit one is capped at 1024 characters by the YAML parser.
    writeFileSync(file, `clouds:\n  a:\n    auth:\n      ? ${'A'.repeat(100_000)}\n      : x\n`);
    const t0 = Date.now();
    expect(messageOf(() => cloudsYamlGlobal([file], 'a'))).not.toBe('');
    expect(Date.now() - t0).toBeLessThan(500);
  }, 60_000);
});
