/**
 * A server that is not the cloud, or a cloud that answers something unexpected: `{}`, an HTML page
 * with status 200, a truncated body. Each provider's first call and its listing fail with one line
 * naming the endpoint and what was expected, never a JavaScript error.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brightbox } from '../../../src/providers/brightbox/index.js';
import { digitalocean } from '../../../src/providers/digitalocean/index.js';
import { openstack } from '../../../src/providers/openstack/index.js';
import { triton } from '../../../src/providers/triton/index.js';
import type { Provider } from '../../../src/providers/types.js';

interface Answer {
  status: number;
  type: string;
  body: string;
}
const ANSWERS: [string, Answer][] = [
  ['{}', { status: 200, type: 'application/json', body: '{}' }],
  [
    'an HTML page with 200',
    { status: 200, type: 'text/html', body: '<!doctype html><html><body>Welcome</body></html>' },
  ],
  [
    'a truncated body',
    { status: 200, type: 'application/json', body: '{"account": {"email": "a@b.c", "sta' },
  ],
];

let server: Server;
let url: string;
/** What every path answers, unless `auth` answers it (a real-looking sign-in, so the next call is reached). */
let answer: Answer;
let auth:
  | ((path: string) => { status: number; headers?: Record<string, string>; body: unknown } | undefined)
  | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const signedIn = auth?.(path);
    if (signedIn) {
      res.writeHead(signedIn.status, { 'content-type': 'application/json', ...signedIn.headers });
      res.end(JSON.stringify(signedIn.body));
      return;
    }
    res.writeHead(answer.status, { 'content-type': answer.type });
    res.end(answer.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
  type: 'pkcs1',
  format: 'pem',
});

const PROVIDERS: [string, () => Provider, typeof auth][] = [
  ['digitalocean', () => digitalocean.create({ token: 'dop_v1_x', apiUrl: url }, {}), undefined],
  [
    'triton',
    () => triton.create({ url, account: 'demo', datacenter: 'dc-1', keyMaterial: String(rsa) }, {}),
    undefined,
  ],
  [
    'brightbox',
    () => brightbox.create({ client: 'cli-12345', clientSecret: 's3cret', apiUrl: url }, {}),
    (path) =>
      path.startsWith('/token')
        ? { status: 200, body: { access_token: 'tok', token_type: 'Bearer', expires_in: 3600 } }
        : undefined,
  ],
  [
    'openstack',
    () =>
      openstack.create(
        {
          cloudConf: `[Global]\nauth-url=${url}/identity/v3\nusername=u\npassword=not-a-real-password\nuser-domain-name=Default\ntenant-name=t\ndomain-name=Default\nregion=RegionOne\n`,
        },
        {},
      ),
    (path) =>
      path.endsWith('/auth/tokens')
        ? {
            status: 201,
            headers: { 'x-subject-token': 'tok' },
            body: {
              token: {
                expires_at: new Date(Date.now() + 3600_000).toISOString(),
                project: { id: 'p1', name: 't' },
                catalog: ['compute', 'network', 'load-balancer'].map((type) => ({
                  type,
                  endpoints: [
                    {
                      interface: 'public',
                      region: 'RegionOne',
                      region_id: 'RegionOne',
                      url: `${url}/${type}`,
                    },
                  ],
                })),
              },
            },
          }
        : undefined,
  ],
];

describe.each(PROVIDERS)('%s, answered by something else', (_name, make, signIn) => {
  it.each(ANSWERS)(
    '%s: one line naming the endpoint, for the first call and for the listing',
    async (_what, a) => {
      answer = a;
      // The first call (a sign-in where the cloud has one), then the listing after a sign-in that worked.
      const steps: ['verify' | 'list', typeof auth][] = [
        ['verify', undefined],
        ['list', signIn],
      ];
      for (const [call, withAuth] of steps) {
        auth = withAuth;
        const provider = make();
        const run = call === 'verify' ? provider.verifyCredentials?.() : provider.instances.list();
        const err = await run?.then(
          () => undefined,
          (e: unknown) => e as Error,
        );
        expect(err, `${call} did not fail`).toBeInstanceOf(Error);
        const message = (err as Error).message;
        expect(message, call).not.toMatch(
          /Cannot read|undefined|is not a function|Unexpected token|JSON at position/,
        );
        // The endpoint: its method and path, or its URL.
        expect(message, call).toMatch(/(GET|POST) \/?\w|http:\/\/127\.0\.0\.1|endpoint at/);
        expect(message.split('\n'), call).toHaveLength(1);
      }
    },
  );
});
