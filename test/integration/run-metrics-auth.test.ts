/**
 * `ccm run` over HTTPS, as the manifests run it: /metrics only for a bearer token the real API server
 * authenticates (TokenReview) and authorises for `get /metrics` (SubjectAccessReview); the probes'
 * paths without a token, as the Kubernetes components serve them.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { type CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { writeInventory } from '../helpers/inventory.js';
import { type InProcess, runInput, startInProcess } from '../helpers/run.js';

let cp: ControlPlane;
let core: CoreV1Api;
let ccm: InProcess;
let inventory: string;
const tokens: Record<'scraper' | 'nobody', string> = { scraper: '', nobody: '' };
// The certificate is ccm's own self-signed one, as in a Deployment without --tls-cert-file.
const insecure = new Agent({ connect: { rejectUnauthorized: false } });

async function get(path: string, token?: string) {
  const res = await fetch(`${ccm.url}${path}`, {
    dispatcher: insecure,
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });
  return { status: res.status, text: await res.text() };
}

beforeAll(async () => {
  cp = await startControlPlane();
  core = fixtureApi(cp.kubeconfigPath);
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  // A Prometheus with the one rule upstream documents for scraping a component, and an account without.
  await rbac.createClusterRole({
    body: {
      metadata: { name: 'metrics-reader' },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: 'metrics-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'metrics-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: 'default' }],
    },
  });
  for (const name of ['scraper', 'nobody'] as const) {
    await core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name } } });
    const request = await core.createNamespacedServiceAccountToken({
      name,
      namespace: 'default',
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    tokens[name] = request.status?.token ?? '';
  }
  inventory = writeInventory([{ id: 'w1' }], { type: 't', region: 'r', zone: 'z' });
  ccm = await startInProcess(runInput(cp.kubeconfigPath, inventory, { plainHttp: false }));
});
afterAll(async () => {
  await ccm?.stop();
  await cp?.stop();
  if (inventory) rmSync(dirname(inventory), { recursive: true, force: true });
});

describe('ccm run over HTTPS', () => {
  it('serves /healthz, /livez and /readyz (verbose too) without a token', async () => {
    expect(ccm.url).toMatch(/^https:\/\//);
    for (const path of ['/healthz', '/livez', '/readyz?verbose']) {
      const res = await get(path);
      expect([200, 503], path).toContain(res.status);
    }
    expect((await get('/readyz?verbose')).text).toContain('informer-sync');
  });

  it('/metrics: 401 without a token or with one the API server does not know, 403 for an account without the rule', async () => {
    expect((await get('/metrics')).status).toBe(401);
    expect(await get('/metrics', 'not-a-token')).toEqual({
      status: 401,
      text: 'the token was not accepted\n',
    });
    const refused = await get('/metrics', tokens.nobody);
    expect(refused.status).toBe(403);
    expect(refused.text).toBe('system:serviceaccount:default:nobody may not get /metrics\n');
    expect(refused.text).not.toContain('ccm_');
  });

  it('/metrics for the token allowed `get /metrics`; each answer is kept, not asked again per scrape', async () => {
    const reviews = async () =>
      (await cp.writes(CCM_USER)).filter(
        (e) => e.objectRef?.resource === 'tokenreviews' || e.objectRef?.resource === 'subjectaccessreviews',
      ).length;
    const before = await reviews();
    const first = await get('/metrics', tokens.scraper);
    expect(first.status).toBe(200);
    expect(first.text).toContain('# TYPE');
    for (let i = 0; i < 5; i++) expect((await get('/metrics', tokens.scraper)).status).toBe(200);
    // One TokenReview and one SubjectAccessReview for six scrapes within the 10 s the answers are kept.
    expect((await reviews()) - before).toBe(2);
  });
});
