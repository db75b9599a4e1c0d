/**
 * The confirming lookup fails, the listing is good (issue 6, item 7): a NotReady Node whose instance
 * left the listing is kept when the lookup by its own provider ID answers 401, 500 or never answers.
 * The real kube-apiserver holds the Nodes; the cloud side is the shared HTTP client (src/providers/http.ts,
 * with its real error mapping, timeouts and retries) against a local HTTP server that serves a good
 * listing and injects one fault into the lookup. A plain "not found" from the same server deletes the
 * Node, so the fault is what keeps it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runNodesPass } from '../../src/controllers/nodes-pass.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createNodeClient } from '../../src/kube/nodes.js';
import { HttpClient } from '../../src/providers/http.js';
import type { Instance, Provider } from '../../src/providers/types.js';
import { createNodes, deleteAllNodes, fixtureApi, forgetNodeDeletions } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';

type Fault = 'not-found' | 401 | 500 | 'hang';

let cp: ControlPlane;
let api: CoreV1Api;
let server: Server;
let baseUrl: string;
let fault: Fault = 'not-found';
let lookups = 0;

const LISTED = { id: '1', name: 'anchor' };

beforeAll(async () => {
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
  server = createServer((req, res) => {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/v1/servers') return json(200, { servers: [LISTED] });
    const m = /^\/v1\/servers\/([^/]+)$/.exec(req.url ?? '');
    if (!m) return json(404, { message: 'no such route' });
    lookups++;
    if (m[1] === LISTED.id) return json(200, { server: LISTED });
    if (fault === 'not-found') return json(404, { id: 'not_found', message: 'server not found' });
    if (fault === 'hang') return; // never answers: the client's timeout must fire
    return json(fault, { id: fault === 401 ? 'unauthorized' : 'server_error', message: 'fault injected' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await cp?.stop();
});
beforeEach(async () => {
  await deleteAllNodes(api);
  // The deletion brake counts the last 10 minutes' deletions from its record: not the last test's.
  await forgetNodeDeletions(api);
  lookups = 0;
});

/** A provider over the shared HTTP client; only the API's own not-found body means "gone". */
function provider(): Provider {
  const http = new HttpClient({
    baseUrl,
    timeoutMs: 300,
    retries: 1,
    backoff: { baseMs: 10, maxMs: 20 },
    isNotFound: (body) => (body as { id?: string } | undefined)?.id === 'not_found',
  });
  const instance = (s: { id: string; name: string }): Instance => ({
    providerID: `testcloud://${s.id}`,
    name: s.name,
    state: 'running',
    type: '',
    region: '',
    zone: '',
    addresses: [],
    labels: {},
  });
  return {
    name: 'testcloud',
    providerIdScheme: 'testcloud',
    instances: {
      list: async () =>
        (await http.get<{ servers: { id: string; name: string }[] }>('/v1/servers')).body.servers.map(
          instance,
        ),
      get: async (providerID) => {
        const id = providerID.replace('testcloud://', '');
        return instance(
          (await http.get<{ server: { id: string; name: string } }>(`/v1/servers/${id}`)).body.server,
        );
      },
    },
  };
}

async function passWith(f: Fault) {
  fault = f;
  await createNodes(api, [
    { name: 'anchor', providerID: 'testcloud://1', tainted: false },
    { name: 'victim', providerID: 'testcloud://9', tainted: false, ready: false },
  ]);
  const kc = loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} });
  const report = await runNodesPass(createNodeClient(kc), provider(), {
    dryRun: false,
    concurrency: 4,
    deletionGracePeriodMs: 0,
  });
  const names = (await api.listNode()).items.map((n) => n.metadata?.name).sort();
  return { report, names, victim: report.nodes.find((n) => n.name === 'victim') };
}

describe('a good listing, then a failing confirming lookup', () => {
  it('baseline: the API\'s own "not found" deletes the Node', async () => {
    const { names, victim } = await passWith('not-found');
    expect(victim?.result).toBe('deleted');
    expect(names).toEqual(['anchor']);
  });

  it.each([
    [401, /401|credentials|unauthori/i],
    [500, /500/],
    ['hang', /time/i],
  ] as const)('keeps the Node when the lookup answers %s', async (f, reason) => {
    const { names, victim } = await passWith(f);
    expect(names).toEqual(['anchor', 'victim']);
    expect(victim?.result).toBe('failed');
    expect(victim?.reason).toMatch(/not deleted/);
    expect(victim?.reason).toMatch(reason);
    expect(lookups).toBeGreaterThan(0);
  });
});
