import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CredentialOptions, createCredentials } from '../../../src/kube/credentials.js';
import type { KubeconfigUser } from '../../../src/kube/kubeconfig-file.js';

const dir = mkdtempSync(join(tmpdir(), 'ccm-credentials-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function options(user: KubeconfigUser, extra: Partial<CredentialOptions> = {}): CredentialOptions {
  return { userName: 'u', user, cluster: { server: 'https://k' }, env: {}, interactive: false, ...extra };
}

function jwt(exp: number): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ exp })}.sig`;
}

/** A plugin that sleeps a little, logs its run and prints `output`. */
function plugin(output: string, exit = 0): { command: string; runs: () => number } {
  const base = join(dir, `plugin-${Math.random().toString(36).slice(2)}`);
  writeFileSync(`${base}.out`, output);
  writeFileSync(
    `${base}.sh`,
    `#!/bin/bash\necho run >> "${base}.runs"\nsleep 0.2\ncat "${base}.out"\necho "plugin says no" >&2\nexit ${exit}\n`,
  );
  chmodSync(`${base}.sh`, 0o755);
  return {
    command: `${base}.sh`,
    runs: () => {
      try {
        return readFileSync(`${base}.runs`, 'utf8').split('\n').filter(Boolean).length;
      } catch {
        return 0;
      }
    },
  };
}

const cred = (status: object, apiVersion = 'client.authentication.k8s.io/v1') =>
  JSON.stringify({ apiVersion, kind: 'ExecCredential', status });

describe('credentials', () => {
  it('a token, basic auth and impersonation become headers; a token wins over basic auth', async () => {
    const c = createCredentials(
      options({
        token: 't',
        username: 'a',
        password: 'b',
        impersonate: { user: 'x', groups: ['g1', 'g2'], extra: { 'scope/s': ['r'] } },
      }),
    );
    expect((await c.current()).headers).toEqual({
      authorization: 'Bearer t',
      'impersonate-user': 'x',
      'impersonate-group': ['g1', 'g2'],
      'impersonate-extra-scope%2Fs': ['r'],
    });
    const basic = createCredentials(options({ username: 'a', password: 'b' }));
    expect((await basic.current()).headers.authorization).toBe(
      `Basic ${Buffer.from('a:b').toString('base64')}`,
    );
    expect(await basic.rejected(await basic.current())).toBe(false);
  });

  it('a token file is re-read when it changes, at most one stat a second', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'first\n');
    let now = 1_000_000;
    const c = createCredentials(options({ tokenFile: path }, { now: () => now }));
    expect((await c.current()).headers.authorization).toBe('Bearer first');
    writeFileSync(path, 'second-and-longer');
    expect((await c.current()).headers.authorization).toBe('Bearer first');
    now += 1001;
    expect((await c.current()).headers.authorization).toBe('Bearer second-and-longer');
  });

  it('a missing file fails with one line naming it', () => {
    expect(() => createCredentials(options({ clientCertificate: join(dir, 'nope.crt') }))).toThrow(
      /user u's client-certificate .*nope\.crt cannot be read \(ENOENT\)/,
    );
  });

  it('an exec credential is kept until it expires, then fetched once for all concurrent callers', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const p = plugin(cred({ token: 'tok', expirationTimestamp: '2030-01-01T00:01:00Z' }));
    const c = createCredentials(
      options(
        { exec: { command: p.command, args: [], env: [], provideClusterInfo: false } },
        { now: () => now },
      ),
    );
    const all = await Promise.all(Array.from({ length: 10 }, () => c.current()));
    expect(new Set(all.map((x) => x.headers.authorization))).toEqual(new Set(['Bearer tok']));
    expect(p.runs()).toBe(1);
    now += 59_000;
    await c.current();
    expect(p.runs()).toBe(1);
    now += 2_000;
    await Promise.all(Array.from({ length: 10 }, () => c.current()));
    expect(p.runs()).toBe(2);
  });

  it('a rejected exec credential is fetched again once, even when many requests were rejected', async () => {
    const p = plugin(cred({ token: 'tok' }));
    const c = createCredentials(
      options({ exec: { command: p.command, args: [], env: [], provideClusterInfo: false } }),
    );
    const used = await c.current();
    const answers = await Promise.all(Array.from({ length: 8 }, () => c.rejected(used)));
    expect(p.runs()).toBe(2);
    // the plugin printed the same token again: retrying would only be rejected again
    expect(answers.every((a) => a === false)).toBe(true);
  });

  it.each([
    ['not JSON', 'oops', 0, /did not print an ExecCredential \(its output is not JSON\)/],
    [
      'a wrong apiVersion',
      cred({ token: 't' }, 'client.authentication.k8s.io/v1beta1'),
      0,
      /expected an ExecCredential of client\.authentication\.k8s\.io\/v1/,
    ],
    ['no credential', cred({}), 0, /printed neither a token nor a client certificate/],
    [
      'a certificate without key',
      cred({ clientCertificateData: 'x' }),
      0,
      /only one of clientCertificateData and clientKeyData/,
    ],
    [
      'a bad expiry',
      cred({ token: 't', expirationTimestamp: 'soon' }),
      0,
      /"soon", which is not an RFC 3339 time/,
    ],
    ['a failure', '', 3, /exited with status 3: plugin says no/],
  ])('an exec plugin printing %s fails with one line', async (_what, output, exit, message) => {
    const p = plugin(output, exit);
    const c = createCredentials(
      options({ exec: { command: p.command, args: [], env: [], provideClusterInfo: false } }),
    );
    await expect(c.current()).rejects.toThrow(message);
  });

  it('an exec plugin that is not installed: the install hint', async () => {
    const c = createCredentials(
      options({
        exec: {
          command: 'ccm-no-such-plugin',
          args: [],
          env: [],
          provideClusterInfo: false,
          installHint: 'brew install it',
        },
      }),
    );
    await expect(c.current()).rejects.toThrow(/could not be started \(ENOENT\): brew install it/);
  });

  it('interactiveMode Always without a terminal is refused', async () => {
    const c = createCredentials(
      options({
        exec: { command: 'true', args: [], env: [], provideClusterInfo: false, interactiveMode: 'Always' },
      }),
    );
    await expect(c.current()).rejects.toThrow(/needs a terminal/);
  });

  it('oidc auth-provider: a valid id-token is used; an expired one or another provider fails at load', async () => {
    const valid = jwt(Math.floor(Date.now() / 1000) + 600);
    const c = createCredentials(options({ authProvider: { name: 'oidc', config: { 'id-token': valid } } }));
    expect((await c.current()).headers.authorization).toBe(`Bearer ${valid}`);
    const expired = jwt(Math.floor(Date.now() / 1000) - 1);
    expect(() =>
      createCredentials(options({ authProvider: { name: 'oidc', config: { 'id-token': expired } } })),
    ).toThrow(
      /id-token is missing or expired and ccm does not refresh it; use an exec credential plugin such as kubelogin/,
    );
    expect(() => createCredentials(options({ authProvider: { name: 'gcp', config: {} } }))).toThrow(
      /auth-provider "gcp", which ccm does not support/,
    );
  });
});
