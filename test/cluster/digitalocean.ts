/**
 * ccm deployed in the real cluster on DigitalOcean as docs/deploy.md says, for the cluster tests that
 * need it running: the simulator with the real Node's droplet (on loopback; ccm's Pods use
 * hostNetwork), `cluster prepare`, `secret create`, `manifests --cronjob | kubectl apply`, and what
 * those tests read back (ccm's Pods, its Lease, its rollout, `ccm doctor`, its HTTPS endpoints).
 */
import { request } from 'node:https';
import { expect } from 'vitest';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { ccm } from '../helpers/cli.js';
import {
  CCM_IMAGE,
  ccmWorkload,
  controllerManagerLeader,
  ensureImage,
  freshCluster,
  hostPath,
  KUBECONFIG,
  kubectl,
  kubectlJson,
  NODE_IP,
  NODE_NAME,
  until,
} from './harness.js';

export const NS = 'kube-system';
export const TAINT = 'node.cloudprovider.kubernetes.io/uninitialized';

export interface Lease {
  spec: { holderIdentity?: string; leaseTransitions?: number };
}
export interface Pod {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: {
    phase: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      ready: boolean;
      image: string;
      restartCount: number;
      state?: { terminated?: { exitCode: number } };
    }>;
  };
}
export interface NodeObject {
  metadata: { name: string; labels: Record<string, string> };
  spec: { providerID?: string; taints?: Array<{ key: string }> };
  status: { addresses: Array<{ type: string; address: string }> };
}

export interface DigitalOceanCluster {
  sim: DigitalOceanSimulator;
  /** The real Node's droplet. */
  dropletId: number;
}

export function doEnv(sim: DigitalOceanSimulator) {
  return { KUBECONFIG, PATH: hostPath(), DO_ACCESS_TOKEN: sim.token, REGION: 'nyc3' };
}

export function doctor(sim: DigitalOceanSimulator, args: string[] = []) {
  return ccm(
    ['doctor', '--provider', 'digitalocean', '--cloud-api-url', sim.url, ...args],
    doEnv(sim),
    180_000,
  );
}

/** A fresh cluster, the simulator with the real Node's droplet, the image imported and `cluster prepare` run. */
export async function prepareDigitalOceanCluster(): Promise<DigitalOceanCluster> {
  await freshCluster();
  const sim = await DigitalOceanSimulator.start();
  const [droplet] = sim.addDroplets({ name: NODE_NAME, privateIP: NODE_IP, publicIP: '203.0.113.10' });
  await ensureImage();
  const controllerManager = await controllerManagerLeader();
  const prepared = await ccm(['cluster', 'prepare', '--yes', '--initialize-existing'], doEnv(sim), 300_000);
  expect(prepared.exitCode, prepared.stdout + prepared.stderr).toBe(0);
  // The restarted kube-controller-manager (its DaemonSet controller) leads before ccm is applied, as on
  // a cluster prepared some time before: its first election waits out the old instance's Lease.
  await until(
    'the restarted kube-controller-manager leading',
    async () => (await controllerManagerLeader()) !== controllerManager,
  );
  return { sim, dropletId: droplet?.id as number };
}

export async function ccmPods(): Promise<Pod[]> {
  const list = await kubectlJson<{ items: Pod[] }>([
    '-n',
    NS,
    'get',
    'pods',
    '-l',
    'app.kubernetes.io/name=ccm',
  ]);
  return list.items.filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] !== 'nodes-init');
}

export async function lease(): Promise<Lease['spec']> {
  return (await kubectlJson<Lease>(['-n', NS, 'get', 'lease', 'cloud-controller-manager'])).spec;
}

export async function rolloutStatus(workload: string, timeout = '240s') {
  return kubectl(['-n', NS, 'rollout', 'status', workload, `--timeout=${timeout}`], {
    reject: false,
    timeoutMs: 300_000,
  });
}

/**
 * docs/deploy.md's three commands with `--cronjob` (ccm secret create, ccm manifests | kubectl apply
 * --server-side), then until ccm's Pod is Ready, the Node initialised and a Lease held. Returns the
 * seconds from `kubectl apply` to each step, and the workload (`daemonset.apps/ccm`).
 */
export async function deployCcm(
  sim: DigitalOceanSimulator,
  dropletId: number,
): Promise<{ seen: Record<string, number>; workload: string }> {
  const secret = await ccm(
    ['secret', 'create', '--provider', 'digitalocean', '--cloud-api-url', sim.url],
    doEnv(sim),
  );
  expect(secret.exitCode, secret.stderr).toBe(0);

  const manifests = await ccm(
    [
      'manifests',
      '--provider',
      'digitalocean',
      '--image',
      CCM_IMAGE,
      '--image-pull-policy',
      'Never',
      '--cronjob',
      '--cloud-api-url',
      sim.url,
      // The simulator answers plain http on the Node's loopback: taken only when asked for.
      '--insecure-cloud-api',
    ],
    doEnv(sim),
  );
  expect(manifests.exitCode, manifests.stderr).toBe(0);
  expect(manifests.stdout).toContain(sim.url);

  const t0 = Date.now();
  await kubectl(['apply', '--server-side', '-f', '-'], { input: manifests.stdout });
  const seen: Record<string, number> = {};
  const mark = (what: string, done: boolean) => {
    if (done && seen[what] === undefined) seen[what] = (Date.now() - t0) / 1000;
  };
  await until(
    'ccm Running and Ready, the Node initialised and untainted',
    async () => {
      const [pod] = await ccmPods();
      const node = await kubectlJson<NodeObject>(['get', 'node', NODE_NAME]);
      mark(
        'scheduled',
        pod?.status.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'True') ?? false,
      );
      mark('running', pod?.status.phase === 'Running');
      mark('ready', pod?.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);
      mark('initialised', node.spec.providerID === `digitalocean://${dropletId}`);
      mark('untainted', !(node.spec.taints ?? []).some((t) => t.key === TAINT));
      // As upstream's cloud-node controller, the addresses are a status write after the taint is gone.
      mark(
        'addresses',
        node.status.addresses.some((a) => a.type === 'ExternalIP'),
      );
      return Object.keys(seen).length === 6;
    },
    180_000,
  );
  const workload = await ccmWorkload();
  expect(workload).toMatch(/ccm$/);
  await until('a leader', async () => (await lease()).holderIdentity);
  return { seen, workload };
}

/**
 * Sets `--name=value` in the args of the first container of a workload or of the CronJob's Job
 * template (what an operator edits with `kubectl edit`), replacing any earlier value.
 */
export async function setArg(resource: string, name: string, value: string): Promise<void> {
  interface PodTemplate {
    spec: { containers: Array<{ args?: string[] }> };
  }
  const cronJob = resource.startsWith('cronjob');
  const path = cronJob
    ? '/spec/jobTemplate/spec/template/spec/containers/0/args'
    : '/spec/template/spec/containers/0/args';
  const object = await kubectlJson<{
    spec: { template?: PodTemplate; jobTemplate?: { spec: { template: PodTemplate } } };
  }>(['-n', NS, 'get', resource]);
  const template = cronJob ? object.spec.jobTemplate?.spec.template : object.spec.template;
  const args = template?.spec.containers[0]?.args ?? [];
  const next = [
    ...args.filter((a) => !a.startsWith(`--${name}=`) && a !== `--${name}`),
    `--${name}=${value}`,
  ];
  await kubectl([
    '-n',
    NS,
    'patch',
    resource,
    '--type=json',
    '-p',
    JSON.stringify([{ op: 'replace', path, value: next }]),
  ]);
}

/**
 * GET one of ccm's HTTPS endpoints on the Node (its Pod uses the host network): the probes' paths
 * need no token, /metrics one the API server accepts for `get` on it. The certificate is ccm's own.
 */
export function ccmEndpoint(path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: 10258,
        path,
        rejectUnauthorized: false,
        timeout: 15_000,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * A token for /metrics as a Prometheus would have one: a ServiceAccount bound to a ClusterRole that
 * allows `get` on the non-resource URL /metrics (docs/run.md, Metrics).
 */
export async function metricsToken(): Promise<string> {
  const objects = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'metrics-reader', namespace: NS } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'metrics-reader' },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'metrics-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'metrics-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'metrics-reader', namespace: NS }],
    },
  ];
  await kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
  });
  return (await kubectl(['-n', NS, 'create', 'token', 'metrics-reader', '--duration=2h'])).stdout.trim();
}
