/**
 * HTTPS_PROXY, NO_PROXY and a kubeconfig's proxy-url, through a real CONNECT proxy on loopback
 * (test/helpers/connect-proxy.ts), on both of ccm's transports: the cloud's (the DigitalOcean
 * simulator over TLS) and the API server's (the real kube-apiserver of test/controlplane). Go's rule
 * never proxies loopback, so the targets are named `api.cloud.invalid` and `kubernetes.default.svc`
 * (a name the API server's certificate carries): the proxy resolves them to 127.0.0.1, and so does this
 * process (test/helpers/loopback-names.ts) when it reaches them around the proxy, never a DNS server.
 * What goes around the proxy is shown by the proxy having had no connection, and by ccm's own lookup of
 * the name; what goes through it by the CONNECT request the proxy received, which carries the proxy's
 * credentials and nothing of the cloud's or the cluster's.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/kube/config.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { HttpClient } from '../../src/providers/http.js';
import { nodeTransport } from '../../src/providers/http-transport.js';
import type { Env } from '../../src/proxy.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { type ConnectProxy, startConnectProxy } from '../helpers/connect-proxy.js';
import { loopbackNamesEnv, resolveToLoopback } from '../helpers/loopback-names.js';
import { tempDir } from '../helpers/tmp.js';
import { selfSigned } from '../unit/helpers/self-signed.js';

const CLOUD = 'api.cloud.invalid';
const APISERVER = 'kubernetes.default.svc';
/** The proxy's credentials: Basic on the CONNECT, and never anywhere else. */
const PROXY_USER = 'proxy-user';
const PROXY_PASSWORD = 'proxy-pa55:word';
const userinfo = `${PROXY_USER}:${encodeURIComponent(PROXY_PASSWORD)}`;
const BASIC = `Basic ${Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64')}`;

let cp: ControlPlane;
let sim: DigitalOceanSimulator;
let proxy: ConnectProxy;
let dir: string;
let cloudCa: string;
let cloudCaFile: string;
/** The control plane's kubeconfig with its server named APISERVER, and its ccm user's token. */
let namedKubeconfig: string;
let kubeToken: string;
let names: ReturnType<typeof resolveToLoopback>;

beforeAll(async () => {
  dir = tempDir('ccm-proxy-');
  selfSigned(dir, 'cloud', CLOUD, `DNS:${CLOUD},IP:127.0.0.1`);
  cloudCaFile = join(dir, 'cloud.pem');
  cloudCa = readFileSync(cloudCaFile, 'utf8');
  [cp, sim, proxy] = await Promise.all([
    startControlPlane(),
    DigitalOceanSimulator.start({
      tls: { key: readFileSync(join(dir, 'cloud.key'), 'utf8'), cert: cloudCa },
    }),
    startConnectProxy({ names: [CLOUD, APISERVER], credentials: `${PROXY_USER}:${PROXY_PASSWORD}` }),
  ]);
  const kubeconfig = readFileSync(cp.kubeconfigPath, 'utf8');
  kubeToken = /token: (\S+)/.exec(kubeconfig)?.[1] ?? '';
  namedKubeconfig = join(dir, 'kubeconfig');
  writeFileSync(namedKubeconfig, kubeconfig.replace(`https://127.0.0.1:${cp.port}`, apiServer()), {
    mode: 0o600,
  });
  names = resolveToLoopback([CLOUD, APISERVER]);
});
afterAll(async () => {
  names?.restore();
  await Promise.all([cp?.stop(), sim?.stop(), proxy?.close()]);
});
afterEach(() => {
  proxy.reset();
  names.lookups.length = 0;
  sim.requests.length = 0;
  expect(sim.takeViolations()).toEqual([]);
});

const cloudPort = () => new URL(sim.url).port;
const apiServer = () => `https://${APISERVER}:${cp.port}`;
const through = (extra: Env = {}): Env => ({ HTTPS_PROXY: proxy.url(userinfo), ...extra });

/** The cloud client as a provider makes it, with its own transport reading `env`. */
function cloud(env: Env, host = CLOUD, retries = 0) {
  return new HttpClient({
    baseUrl: `https://${host}:${cloudPort()}/v2`,
    authorize: ({ headers }) => headers.set('authorization', `Bearer ${sim.token}`),
    secrets: () => [sim.token],
    transport: nodeTransport({ ca: cloudCa }, { env }),
    retries,
    backoff: { baseMs: 1, maxMs: 2 },
  });
}

/** What a CONNECT must be: the target, the proxy's credentials, and nothing of the target's. */
function expectOnlyProxyCredentials(secrets: string[]): void {
  expect(proxy.connects.length).toBeGreaterThan(0);
  for (const connect of proxy.connects) {
    const headers = Object.fromEntries(connect.headers.map(([name, value]) => [name.toLowerCase(), value]));
    expect(headers['proxy-authorization']).toBe(BASIC);
    expect(headers.authorization).toBeUndefined();
    const seen = JSON.stringify(connect);
    for (const secret of secrets) expect(seen).not.toContain(secret);
    expect(seen).not.toMatch(/bearer/i);
  }
}

async function failure(p: Promise<unknown>): Promise<Error> {
  const outcome = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(Error);
  return outcome as Error;
}

describe('the cloud', () => {
  it('goes through HTTPS_PROXY: one CONNECT for a kept-alive connection, the token only inside the tunnel', async () => {
    const client = cloud(through());
    await client.get('/account');
    await client.get('/droplets');
    expect(proxy.connects.map((c) => [c.line, c.status])).toEqual([
      [`CONNECT ${CLOUD}:${cloudPort()} HTTP/1.1`, 200],
    ]);
    expectOnlyProxyCredentials([sim.token, PROXY_PASSWORD]);
    // The cloud had the token; ccm never looked the name up (the proxy did).
    expect(sim.requests.map((r) => r.url)).toEqual(['/v2/account', '/v2/droplets']);
    expect(names.lookups).toEqual([]);
  });

  it('goes around it for NO_PROXY (a domain, with a leading dot) and for loopback', async () => {
    await cloud(through({ NO_PROXY: '.invalid' })).get('/account');
    expect(names.lookups).toEqual([CLOUD]);
    await cloud(through({ no_proxy: `${CLOUD}:${cloudPort()}` })).get('/account');
    await cloud(through(), '127.0.0.1').get('/account');
    expect(proxy.connections()).toBe(0);
    // A port NO_PROXY does not name: through it again.
    await cloud(through({ NO_PROXY: `${CLOUD}:443` })).get('/account');
    expect(proxy.connects).toHaveLength(1);
  });

  it('a proxy that refuses or cannot be reached: one line naming it (not its credentials) and its variable', async () => {
    // Without the credentials: a 407, which another attempt would meet again (one attempt only).
    const noCredentials = await failure(
      cloud(through({ HTTPS_PROXY: proxy.url() }), CLOUD, 2).get('/account'),
    );
    expect(noCredentials.message).toBe(
      `GET /v2/account: the proxy ${proxy.url()} (HTTPS_PROXY) refused to open a tunnel to ${CLOUD}:${cloudPort()} (407 Proxy Authentication Required); check HTTPS_PROXY, or list ${CLOUD} in NO_PROXY to go around the proxy`,
    );
    expect(proxy.connects).toHaveLength(1);
    // A wrong password, from https_proxy: the same, and the password shown nowhere.
    const wrong = await failure(cloud({ https_proxy: proxy.url(`${PROXY_USER}:not-it`) }).get('/account'));
    expect(wrong.message).toContain(`the proxy ${proxy.url()} (https_proxy) refused to open a tunnel`);
    expect(wrong.message).not.toContain('not-it');
    // 502: the proxy could not reach the cloud, which may pass: retried, then given up.
    proxy.refuse(502);
    proxy.connects.length = 0;
    const gateway = await failure(cloud(through(), CLOUD, 2).get('/account'));
    expect(gateway.message).toMatch(/\(502 Bad Gateway\); check HTTPS_PROXY, .*, gave up after 3 attempts$/);
    expect(proxy.connects).toHaveLength(3);
    // Nobody listening.
    await proxy.close().catch(() => {});
    const closed = await failure(cloud({ HTTPS_PROXY: `http://${userinfo}@127.0.0.1:1` }).get('/account'));
    expect(closed.message).toBe(
      `GET /v2/account: cannot reach the proxy http://127.0.0.1:1 (HTTPS_PROXY) (ECONNREFUSED); check HTTPS_PROXY, or list ${CLOUD} in NO_PROXY to go around the proxy`,
    );
    for (const err of [noCredentials, wrong, gateway, closed]) {
      expect(err.message).not.toContain(PROXY_PASSWORD);
      expect(err.message).not.toContain(encodeURIComponent(PROXY_PASSWORD));
      expect(err.message.split('\n')).toHaveLength(1);
    }
    expect(sim.requests).toEqual([]);
    proxy = await startConnectProxy({
      names: [CLOUD, APISERVER],
      credentials: `${PROXY_USER}:${PROXY_PASSWORD}`,
    });
  });

  it('a socks5 proxy is refused in one line, nothing sent', async () => {
    const err = await failure(cloud({ HTTPS_PROXY: 'socks5://127.0.0.1:1080' }).get('/account'));
    expect(err.message).toBe(
      'GET /v2/account: HTTPS_PROXY names a socks5 proxy (socks5://127.0.0.1:1080), which ccm does not support; use an http:// or https:// proxy',
    );
    expect(sim.requests).toEqual([]);
  });
});

describe('the API server', () => {
  const transport = (env: Env, kubeconfig = namedKubeconfig) =>
    new KubeTransport(loadKubeConfig({ kubeconfig, env }));
  const namespace = (t: KubeTransport) => t.request({ method: 'GET', path: '/api/v1/namespaces/default' });

  it('goes through HTTPS_PROXY from a kubeconfig, the bearer token only inside the tunnel', async () => {
    const t = transport(through());
    try {
      await namespace(t);
      await namespace(t);
    } finally {
      await t.close();
    }
    expect(proxy.connects.map((c) => [c.line, c.status])).toEqual([
      [`CONNECT ${APISERVER}:${cp.port} HTTP/1.1`, 200],
    ]);
    expectOnlyProxyCredentials([kubeToken, PROXY_PASSWORD]);
    expect(names.lookups).toEqual([]);
  });

  it('goes around it for NO_PROXY and for a loopback server', async () => {
    for (const noProxy of ['.svc', 'kubernetes.default.svc', `*.default.svc,${APISERVER}:${cp.port}`]) {
      const t = transport(through({ NO_PROXY: noProxy }));
      await namespace(t).finally(() => t.close());
    }
    expect(names.lookups).toEqual([APISERVER, APISERVER, APISERVER]);
    const loopback = transport(through(), cp.kubeconfigPath);
    await namespace(loopback).finally(() => loopback.close());
    expect(proxy.connections()).toBe(0);
  });

  it("a cluster's proxy-url is used for every request, NO_PROXY and loopback aside, as client-go uses it", async () => {
    const kubeconfig = join(dir, 'kubeconfig-proxy-url');
    writeFileSync(
      kubeconfig,
      readFileSync(cp.kubeconfigPath, 'utf8').replace(
        /( +)server: .*/,
        `$&\n$1proxy-url: ${proxy.url(userinfo)}`,
      ),
    );
    const t = transport({ NO_PROXY: '*' }, kubeconfig);
    await namespace(t).finally(() => t.close());
    expect(proxy.connects.map((c) => c.line)).toEqual([`CONNECT 127.0.0.1:${cp.port} HTTP/1.1`]);
    expectOnlyProxyCredentials([kubeToken, PROXY_PASSWORD]);
    // Refused: the line names the kubeconfig's setting.
    proxy.refuse(403);
    const refused = transport({}, kubeconfig);
    const err = await failure(namespace(refused).finally(() => refused.close()));
    expect(err.message).toBe(
      `cannot reach the Kubernetes API server at https://127.0.0.1:${cp.port}: the proxy ${proxy.url()} (proxy-url of cluster test in the kubeconfig) refused to open a tunnel to 127.0.0.1:${cp.port} (403 Forbidden); check the proxy-url of cluster test in the kubeconfig`,
    );
  });

  it('a proxy that refuses or cannot be reached: one line naming it and its variable', async () => {
    const noCredentials = transport({ HTTPS_PROXY: proxy.url() });
    const refused = await failure(namespace(noCredentials).finally(() => noCredentials.close()));
    expect(refused.message).toBe(
      `cannot reach the Kubernetes API server at ${apiServer()}: the proxy ${proxy.url()} (HTTPS_PROXY) refused to open a tunnel to ${APISERVER}:${cp.port} (407 Proxy Authentication Required); check HTTPS_PROXY, or list ${APISERVER} in NO_PROXY to go around the proxy`,
    );
    const nobody = transport({ HTTPS_PROXY: `http://${userinfo}@127.0.0.1:1` });
    const unreachable = await failure(namespace(nobody).finally(() => nobody.close()));
    expect(unreachable.message).toBe(
      `cannot reach the Kubernetes API server at ${apiServer()}: cannot reach the proxy http://127.0.0.1:1 (HTTPS_PROXY) (ECONNREFUSED); check HTTPS_PROXY, or list ${APISERVER} in NO_PROXY to go around the proxy`,
    );
    for (const err of [refused, unreachable]) expect(err.message).not.toContain(PROXY_PASSWORD);
  });

  it('in a Pod (the ServiceAccount), the `kubernetes` Service is never reached through HTTPS_PROXY', async () => {
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), cp.adminToken);
    writeFileSync(join(sa, 'ca.crt'), Buffer.from(cp.caData, 'base64'));
    const access = loadKubeConfig({
      env: through({
        KUBERNETES_SERVICE_HOST: APISERVER,
        KUBERNETES_SERVICE_PORT: String(cp.port),
        HOME: dir,
      }),
      serviceAccountDir: sa,
    });
    expect(access.inCluster).toBe(true);
    const t = new KubeTransport(access);
    await namespace(t).finally(() => t.close());
    expect(names.lookups).toEqual([APISERVER]);
    expect(proxy.connections()).toBe(0);
  });

  it('a socks5 proxy-url, or a proxy for a plain http server, is refused in one line', () => {
    const socks = join(dir, 'kubeconfig-socks');
    writeFileSync(
      socks,
      readFileSync(cp.kubeconfigPath, 'utf8').replace(
        /( +)server: .*/,
        '$&\n$1proxy-url: socks5://127.0.0.1:1080',
      ),
    );
    expect(() => loadKubeConfig({ kubeconfig: socks, env: {} })).toThrow(
      'the proxy-url of cluster test in the kubeconfig names a socks5 proxy (socks5://127.0.0.1:1080), which ccm does not support; use an http:// or https:// proxy',
    );
    const plain = join(dir, 'kubeconfig-plain');
    writeFileSync(
      plain,
      readFileSync(cp.kubeconfigPath, 'utf8')
        .replace(/server: .*/, `server: http://127.0.0.1:${cp.port}\n      proxy-url: ${proxy.url(userinfo)}`)
        .replace(/ +certificate-authority-data: .*\n/, ''),
    );
    expect(() => loadKubeConfig({ kubeconfig: plain, env: {} })).toThrow(
      `the kubeconfig's cluster test has the plain http server http://127.0.0.1:${cp.port} and the proxy ${proxy.url()} (proxy-url of cluster test in the kubeconfig): the proxy would read the credentials; use the server's https URL or no proxy`,
    );
  });
});

describe('the built CLI with HTTPS_PROXY in its environment', () => {
  /** `ccm nodes list` as a reader runs it, its names resolved to 127.0.0.1 and its lookups of them logged. */
  async function nodesList(env: Record<string, string>, args: string[] = []) {
    const log = join(dir, `lookups-${Date.now()}`);
    writeFileSync(log, '');
    const run = await ccm(['nodes', 'list', '--provider', 'digitalocean', ...args], {
      KUBECONFIG: namedKubeconfig,
      DO_ACCESS_TOKEN: sim.token,
      DO_OVERRIDE_URL: `https://${CLOUD}:${cloudPort()}`,
      // The simulator's certificate, trusted as a cloud's CA is (the system's store, or this).
      NODE_EXTRA_CA_CERTS: cloudCaFile,
      ...loopbackNamesEnv([CLOUD, APISERVER], log),
      ...env,
    });
    return { ...run, lookups: readFileSync(log, 'utf8').split('\n').filter(Boolean) };
  }

  beforeAll(async () => {
    await createNodes(fixtureApi(cp.kubeconfigPath), [{ name: 'proxied-1' }]);
  });

  it('ccm nodes list: the cloud and the API server both through the proxy, or each around it by NO_PROXY', async () => {
    const both = await nodesList({ HTTPS_PROXY: proxy.url(userinfo) });
    expect(both.exitCode, both.stderr).toBe(0);
    expect(both.stdout).toContain('proxied-1');
    expect(proxy.connects.map((c) => c.line).sort()).toEqual([
      `CONNECT ${CLOUD}:${cloudPort()} HTTP/1.1`,
      `CONNECT ${APISERVER}:${cp.port} HTTP/1.1`,
    ]);
    expectOnlyProxyCredentials([sim.token, kubeToken, PROXY_PASSWORD]);
    expect(both.lookups).toEqual([]);
    expect(sim.requests.map((r) => r.url)).toEqual(['/v2/droplets?per_page=200']);

    proxy.reset();
    const apiAround = await nodesList({ HTTPS_PROXY: proxy.url(userinfo), NO_PROXY: `.svc,10.0.0.0/8` });
    expect(apiAround.exitCode, apiAround.stderr).toBe(0);
    expect(proxy.connects.map((c) => c.line)).toEqual([`CONNECT ${CLOUD}:${cloudPort()} HTTP/1.1`]);
    expect(apiAround.lookups).toEqual([APISERVER]);
  });

  it('a refused CONNECT: one line naming the proxy and HTTPS_PROXY, no credentials in any output', async () => {
    const env = { HTTPS_PROXY: proxy.url(`${PROXY_USER}:wrong-password`), NO_PROXY: APISERVER };
    const line = `the proxy ${proxy.url()} (HTTPS_PROXY) refused to open a tunnel to ${CLOUD}:${cloudPort()} (407 Proxy Authentication Required); check HTTPS_PROXY, or list ${CLOUD} in NO_PROXY to go around the proxy`;
    for (const args of [[], ['-o', 'json']]) {
      const run = await nodesList(env, args);
      expect(run.exitCode, run.stderr).toBe(1);
      const output = `${run.stdout}\n${run.stderr}`;
      expect(output).toContain(line);
      for (const secret of ['wrong-password', PROXY_USER, sim.token, kubeToken])
        expect(output).not.toContain(secret);
    }
    expect(sim.requests).toEqual([]);
  });
});
