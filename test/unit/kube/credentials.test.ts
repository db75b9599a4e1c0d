import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CredentialOptions, createCredentials } from '../../../src/kube/credentials.js';
import type { KubeconfigUser } from '../../../src/kube/kubeconfig-file.js';
import { credentialEnvNames } from '../../../src/providers/registry.js';

const dir = mkdtempSync(join(tmpdir(), 'ccm-credentials-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function options(user: KubeconfigUser, extra: Partial<CredentialOptions> = {}): CredentialOptions {
  return { userName: 'u', user, cluster: { server: 'https://k' }, env: {}, interactive: false, ...extra };
}

/** A user whose credential comes from the exec plugin `command`: no args, no env, no cluster info, unless `exec` says. */
function execUser(command: string, exec: Partial<NonNullable<KubeconfigUser['exec']>> = {}): KubeconfigUser {
  return { exec: { command, args: [], env: [], provideClusterInfo: false, ...exec } };
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
    const c = createCredentials(options(execUser(p.command), { now: () => now }));
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
    const c = createCredentials(options(execUser(p.command)));
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
    const c = createCredentials(options(execUser(p.command)));
    await expect(c.current()).rejects.toThrow(message);
  });

  it('an exec plugin that is not installed: the install hint', async () => {
    const c = createCredentials(options(execUser('ccm-no-such-plugin', { installHint: 'brew install it' })));
    await expect(c.current()).rejects.toThrow(/could not be started \(ENOENT\): brew install it/);
  });

  it('an exec plugin that hangs is killed after the timeout, with what it started', async () => {
    const base = join(dir, `hang-${Math.random().toString(36).slice(2)}`);
    // It starts a helper of its own, records both process ids, and waits for ever.
    writeFileSync(`${base}.sh`, `#!/bin/bash\nsleep 600 &\necho "$$ $!" > "${base}.pids"\nsleep 600\n`);
    chmodSync(`${base}.sh`, 0o755);
    const c = createCredentials(options(execUser(`${base}.sh`), { execTimeoutMs: 3000 }));
    await expect(c.current()).rejects.toThrow(
      /^the exec credential plugin ".*hang-\w+\.sh" of user u did not finish within 3 s and was stopped; run it by hand to see what it waits for$/,
    );
    const pids = readFileSync(`${base}.pids`, 'utf8').trim().split(' ').map(Number);
    expect(pids).toHaveLength(2);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(() => pids.filter(alive), { timeout: 10_000 }).toEqual([]);
  });

  it("an exec plugin does not inherit ccm's cloud credential variables; the kubeconfig's env still reaches it", async () => {
    const hidden = await credentialEnvNames();
    // From the providers' schemas: every secret field's variables, nothing that is not a secret.
    expect(hidden).toEqual(expect.arrayContaining(['DO_ACCESS_TOKEN', 'BRIGHTBOX_CLIENT_SECRET']));
    expect(hidden).toEqual(expect.arrayContaining(['TRITON_KEY_MATERIAL', 'SDC_KEY_PASSPHRASE']));
    expect(hidden).not.toContain('SSH_AUTH_SOCK');
    expect(hidden).not.toContain('DO_OVERRIDE_URL');
    const base = join(dir, `env-${Math.random().toString(36).slice(2)}`);
    writeFileSync(`${base}.sh`, `#!/bin/bash\nenv > "${base}.env"\necho '${cred({ token: 't' })}'\n`);
    chmodSync(`${base}.sh`, 0o755);
    const env = Object.fromEntries(hidden.map((name) => [name, `secret-of-${name}`]));
    const c = createCredentials(
      options(execUser(`${base}.sh`, { env: [{ name: 'PLUGIN_TOKEN', value: 'given-by-the-kubeconfig' }] }), {
        env: { ...env, PATH: process.env.PATH, KEEP_ME: 'kept' },
      }),
    );
    expect((await c.current()).headers.authorization).toBe('Bearer t');
    const seen = readFileSync(`${base}.env`, 'utf8');
    expect(seen).toContain('KEEP_ME=kept\n');
    expect(seen).toContain('PLUGIN_TOKEN=given-by-the-kubeconfig\n');
    for (const name of hidden) expect(seen).not.toContain(`secret-of-${name}`);
  });

  it("strips control characters from a plugin's stderr and from the install hint", async () => {
    const hostile = '\u001b[2J\u001b]0;owned\u0007bad \u001b[31mthing\rX\u202e\u0008!';
    const base = join(dir, `ansi-${Math.random().toString(36).slice(2)}`);
    writeFileSync(`${base}.err`, `${hostile}\n`);
    writeFileSync(`${base}.sh`, `#!/bin/bash\ncat "${base}.err" >&2\nexit 1\n`);
    chmodSync(`${base}.sh`, 0o755);
    const failing = createCredentials(options(execUser(`${base}.sh`)));
    const err = await failing.current().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/exited with status 1: bad thingX!$/);
    const missing = createCredentials(options(execUser('ccm-no-such-plugin', { installHint: hostile })));
    const hint = await missing.current().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(hint?.message).toMatch(/could not be started \(ENOENT\): bad thingX!$/);
    const unprintable = [...(err?.message ?? ''), ...(hint?.message ?? '')].filter((c) => {
      const code = c.codePointAt(0) ?? 0;
      return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x202e;
    });
    expect(unprintable).toEqual([]);
  });

  it('interactiveMode Always without a terminal is refused', async () => {
    const c = createCredentials(options(execUser('true', { interactiveMode: 'Always' })));
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
