/**
 * The Helm chart (charts/ccm) with the real helm: `helm lint`; `helm template` gives, object by object,
 * what `ccm manifests` prints for the same choices (each provider, replicas and leader election,
 * placement, routes, the CronJob, metrics); it refuses what ccm refuses; and `helm install` and
 * `helm upgrade` against the real kube-apiserver of the test control plane create and change the
 * objects they should.
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  AppsV1Api,
  AuthorizationV1Api,
  BatchV1Api,
  KubeConfig,
  KubernetesObjectApi,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderManifests } from '../../src/cli/manifests.js';
import { loadProvider, providerNames } from '../../src/providers/registry.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { CHART, type Doc, helm, helmTemplate, objectsOf, valuesFile } from '../helpers/helm.js';
import { tempDir } from '../helpers/tmp.js';

const REPOSITORY = 'registry.example.com/ccm';
const IMAGE = `${REPOSITORY}:0.1.0`;

/** One choice, as chart values and as the flags of `ccm manifests`. */
interface Case {
  name: string;
  values: Record<string, unknown>;
  flags: string[];
  namespace?: string;
}

const base = (provider: string) => ({ provider, image: { repository: REPOSITORY } });

const CASES: Case[] = [
  ...providerNames.map((provider) => ({
    name: `${provider}, every default`,
    values: base(provider),
    flags: ['--provider', provider],
  })),
  {
    name: 'any Node, three replicas',
    values: { ...base('digitalocean'), anyNode: true, replicas: 3 },
    flags: ['--provider', 'digitalocean', '--any-node', '--replicas', '3'],
  },
  {
    name: 'any Node, the default two replicas',
    values: { ...base('brightbox'), anyNode: true },
    flags: ['--provider', 'brightbox', '--any-node'],
  },
  {
    name: 'one replica on the control plane without leader election',
    values: { ...base('triton'), replicas: 1, leaderElection: { enabled: false } },
    flags: ['--provider', 'triton', '--replicas', '1', '--no-leader-elect'],
  },
  {
    name: 'routes: the cluster CIDR and name',
    values: { ...base('openstack'), clusterCIDR: '10.244.0.0/16', clusterName: 'prod' },
    flags: ['--provider', 'openstack', '--cluster-cidr', '10.244.0.0/16', '--cluster-name', 'prod'],
  },
  {
    name: 'the nodes init CronJob',
    values: { ...base('digitalocean'), cronjob: { enabled: true } },
    flags: ['--provider', 'digitalocean', '--cronjob'],
  },
  {
    name: 'Cloudlycke with a credentials Secret and the CronJob',
    values: { ...base('cloudlycke'), credentialsSecret: 'ccm/inventory', cronjob: { enabled: true } },
    flags: ['--provider', 'cloudlycke', '--credentials-secret', 'ccm/inventory', '--cronjob'],
  },
  {
    name: 'metrics: the ServiceMonitor and the scraper of kube-prometheus',
    values: { ...base('openstack'), metrics: { serviceMonitor: true } },
    flags: ['--provider', 'openstack', '--service-monitor'],
  },
  {
    name: 'metrics: another scraper',
    values: {
      ...base('digitalocean'),
      metrics: { serviceMonitor: true, scraper: { namespace: 'observability', name: 'prometheus' } },
    },
    flags: [
      '--provider',
      'digitalocean',
      '--service-monitor',
      '--metrics-scraper',
      'observability/prometheus',
    ],
  },
  {
    name: 'a node selector, tolerations, resources, extra arguments, a pinned image',
    values: {
      provider: 'openstack',
      image: {
        repository: REPOSITORY,
        tag: '0.1.0',
        digest: `sha256:${'a'.repeat(64)}`,
        pullPolicy: 'Always',
      },
      nodeSelector: { 'node-role.kubernetes.io/system': 'true' },
      tolerations: [
        { key: 'dedicated', operator: 'Equal', value: 'ccm', effect: 'NoSchedule' },
        { key: 'system', operator: 'Exists', effect: 'NoExecute' },
      ],
      resources: { requests: { cpu: '100m', memory: '300Mi' }, limits: { memory: '600Mi' } },
      extraArgs: ['--concurrency=4', '--node-monitor-period=10s'],
    },
    flags: [
      '--provider',
      'openstack',
      '--image',
      `${IMAGE}@sha256:${'a'.repeat(64)}`,
      '--image-pull-policy',
      'Always',
      '--node-selector',
      'node-role.kubernetes.io/system=true',
      '--toleration',
      'dedicated=ccm:NoSchedule',
      '--toleration',
      'system:NoExecute',
      '--requests',
      'cpu=100m,memory=300Mi',
      '--limits',
      'memory=600Mi',
      '--extra-arg=--concurrency=4',
      '--extra-arg=--node-monitor-period=10s',
    ],
  },
  {
    name: 'the cloud API URL and the log level, in both pods',
    values: {
      ...base('brightbox'),
      cloudApiUrl: 'https://api.gb1s.example.com',
      logLevel: 'debug',
      cronjob: { enabled: true },
    },
    flags: [
      '--provider',
      'brightbox',
      '--cloud-api-url',
      'https://api.gb1s.example.com',
      '--log-level',
      'debug',
      '--cronjob',
    ],
  },
  {
    name: "a plain http cloud API on the Node's loopback, taken when asked",
    values: {
      ...base('triton'),
      cloudApiUrl: 'http://127.0.0.1:8080',
      insecureCloudApi: true,
      logLevel: 'info',
    },
    flags: ['--provider', 'triton', '--cloud-api-url', 'http://127.0.0.1:8080', '--insecure-cloud-api'],
  },
  {
    name: 'proxy variables in both pods, a Deployment',
    values: {
      ...base('digitalocean'),
      anyNode: true,
      cronjob: { enabled: true },
      env: { NO_PROXY: '.corp.example,10.0.0.0/8', HTTPS_PROXY: 'http://proxy.corp.example:3128' },
    },
    flags: [
      '--provider',
      'digitalocean',
      '--any-node',
      '--cronjob',
      '--env',
      'NO_PROXY=.corp.example,10.0.0.0/8',
      '--env',
      'HTTPS_PROXY=http://proxy.corp.example:3128',
    ],
  },
  // resources: helm merges the value into the default by resource, and --requests/--limits do the same.
  {
    name: 'resources: only the CPU request changed, the memory request kept',
    values: { ...base('digitalocean'), resources: { requests: { cpu: '100m' } } },
    flags: ['--provider', 'digitalocean', '--requests', 'cpu=100m'],
  },
  {
    name: 'resources: no limits (limits: null, --limits none)',
    values: { ...base('digitalocean'), resources: { limits: null } },
    flags: ['--provider', 'digitalocean', '--limits', 'none'],
  },
  {
    name: 'resources: no memory request, a bigger limit',
    values: { ...base('openstack'), resources: { requests: { memory: null }, limits: { memory: '1Gi' } } },
    flags: ['--provider', 'openstack', '--requests', 'memory=none', '--limits', 'memory=1Gi'],
  },
  {
    name: 'a namespace of its own',
    values: { ...base('digitalocean'), cronjob: { enabled: true } },
    flags: ['--provider', 'digitalocean', '--cronjob', '--namespace', 'ccm-system'],
    namespace: 'ccm-system',
  },
];

const key = (o: Doc) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;

describe('helm lint', () => {
  it('passes, strict, with the values of every case', async () => {
    for (const c of CASES.slice(0, 3).concat(CASES.slice(-2))) {
      const lint = await helm(['lint', '--strict', CHART, '-f', valuesFile(c.values)]);
      expect(lint.exitCode, `${c.name}\n${lint.stdout}${lint.stderr}`).toBe(0);
      expect(lint.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });
});

describe('helm template and ccm manifests', () => {
  it.each(CASES)('$name: the same objects', async (c) => {
    const namespace = c.namespace ?? 'kube-system';
    const chart = await helmTemplate(c.values, namespace);
    expect(chart.result.exitCode, chart.result.stderr).toBe(0);
    const flags = c.flags.includes('--image') ? c.flags : [...c.flags, '--image', IMAGE];
    const printed = await ccm(['manifests', ...flags]);
    expect(printed.exitCode, printed.stderr).toBe(0);
    // The chart leaves its namespace to `helm install --create-namespace`.
    const manifests = objectsOf(printed.stdout).filter((o) => o.kind !== 'Namespace');
    expect(chart.objects.map(key).sort()).toEqual(manifests.map(key).sort());
    const byKey = new Map(manifests.map((o) => [key(o), o]));
    for (const object of chart.objects) expect(object, key(object)).toEqual(byKey.get(key(object)));
  });

  it('sampled combinations of every choice: the same objects as renderManifests', async () => {
    // A fixed seed: the same 16 combinations each run, of choices the cases above take one by one.
    let seed = 47;
    const pick = <T>(list: readonly T[]): T => {
      seed = ((Math.imul(seed, 1103515245) + 12345) >>> 0) % 2 ** 31;
      // The high bits: the low ones of this generator repeat with a short period.
      return list[Math.floor(seed / 65_536) % list.length] as T;
    };
    let sampled = 0;
    while (sampled < 16) {
      const provider = pick(providerNames);
      const definition = await loadProvider(provider);
      const placement = pick(['control-plane', 'node-selector', 'any-node'] as const);
      const deployment = placement === 'any-node' || pick([true, false]);
      const leaderElect = !deployment || pick([true, false]);
      const cloudApiUrl = definition.apiUrlField !== undefined && pick([true, false]);
      const [secret, cidr, name, cronjob, metrics, debug] = [1, 2, 3, 4, 5, 6].map(() => pick([true, false]));
      const replicas = deployment ? (leaderElect ? 3 : 1) : undefined;
      const values = {
        ...base(provider),
        ...(secret ? { credentialsSecret: 'ccm/credentials' } : {}),
        ...(placement === 'node-selector' ? { nodeSelector: { pool: 'system' } } : {}),
        ...(placement === 'any-node' ? { anyNode: true } : {}),
        ...(replicas !== undefined ? { replicas } : {}),
        leaderElection: { enabled: leaderElect },
        ...(cidr ? { clusterCIDR: '10.244.0.0/16' } : {}),
        ...(name ? { clusterName: 'prod' } : {}),
        cronjob: { enabled: cronjob },
        metrics: { serviceMonitor: metrics },
        ...(cloudApiUrl ? { cloudApiUrl: 'https://api.example.com' } : {}),
        ...(debug ? { logLevel: 'debug' } : {}),
      };
      const expected = renderManifests(definition, {
        image: IMAGE,
        namespace: 'kube-system',
        controllers: '*',
        leaseName: 'cloud-controller-manager',
        placement:
          placement === 'node-selector'
            ? { kind: 'node-selector', labels: { pool: 'system' } }
            : { kind: placement },
        ...(secret ? { credentialsSecret: 'ccm/credentials' } : {}),
        ...(replicas !== undefined ? { replicas } : {}),
        leaderElect,
        ...(cidr ? { clusterCIDR: '10.244.0.0/16' } : {}),
        ...(name ? { clusterName: 'prod' } : {}),
        cronjob: cronjob === true,
        ...(metrics ? { metrics: { scraper: { namespace: 'monitoring', name: 'prometheus-k8s' } } } : {}),
        ...(cloudApiUrl ? { cloudApiUrl: 'https://api.example.com' } : {}),
        ...(debug ? { logLevel: 'debug' } : {}),
      }) as unknown as Doc[];
      const chart = await helmTemplate(values);
      expect(chart.result.exitCode, `${JSON.stringify(values)}\n${chart.result.stderr}`).toBe(0);
      const byKey = new Map(expected.map((o) => [key(o), o]));
      expect(chart.objects.map(key).sort(), JSON.stringify(values)).toEqual([...byKey.keys()].sort());
      for (const object of chart.objects) {
        expect(object, `${key(object)} of ${JSON.stringify(values)}`).toEqual(byKey.get(key(object)));
      }
      sampled++;
    }
  });

  it('refuses, in one line, what ccm manifests refuses', async () => {
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ image: { repository: REPOSITORY } }, /provider: expected one of brightbox, cloudlycke, /],
      [{ provider: 'digitalocean' }, /image\.repository: give the image of ccm/],
      [
        { ...base('digitalocean'), image: { repository: 'Registry.example.com/CCM' } },
        /image: expected an image reference/,
      ],
      [
        { ...base('digitalocean'), leaderElection: { enabled: false } },
        /leaderElection\.enabled: false needs one pod/,
      ],
      [{ ...base('digitalocean'), anyNode: true, leaderElection: { enabled: false } }, /needs one pod/],
      [{ ...base('digitalocean'), anyNode: true, nodeSelector: { a: 'b' } }, /anyNode and nodeSelector/],
      [
        { provider: 'digitalocean', image: { repository: 'localhost/ccm' } },
        /names a registry on the Node itself/,
      ],
      [{ provider: 'digitalocean', image: { repository: '127.0.0.1:5000/ccm' } }, /on the Node itself/],
      [
        { ...base('openstack'), cloudApiUrl: 'https://a.example.com' },
        /the openstack provider has no API URL/,
      ],
      [{ ...base('digitalocean'), cloudApiUrl: 'http://api.example.com' }, /plain http to another machine/],
      [{ ...base('digitalocean'), cloudApiUrl: 'http://127.0.0.1:8080' }, /or set insecureCloudApi: true/],
      [
        { ...base('digitalocean'), logLevel: 'verbose' },
        /logLevel: expected one of error, warn, info, debug/,
      ],
      [
        { ...base('digitalocean'), credentialsSecret: 'digitalocean' },
        /credentialsSecret: expected namespace\/name/,
      ],
    ];
    // An image loaded onto each Node is found by its name, never pulled: taken, as by ccm manifests.
    const loaded = await helmTemplate({
      provider: 'digitalocean',
      image: { repository: 'localhost/ccm', pullPolicy: 'Never' },
    });
    expect(loaded.result.exitCode, loaded.result.stderr).toBe(0);
    for (const [values, message] of refusals) {
      const { result } = await helmTemplate(values);
      expect(result.exitCode, JSON.stringify(values)).not.toBe(0);
      expect(result.stderr).toMatch(message);
    }
  });
});

describe('what the chart refuses, ccm manifests refuses, and the other way round', () => {
  // [chart values, the flags of ccm manifests for the same choice, the chart's line, ccm's line]
  const BOTH: [Record<string, unknown>, string[], RegExp, RegExp][] = [
    [
      { ...base('openstack'), clusterCIDR: 'garbage' },
      ['--provider', 'openstack', '--cluster-cidr', 'garbage'],
      /clusterCIDR: expected CIDRs such as 10\.244\.0\.0\/16, got "garbage"/,
      /--cluster-cidr: expected CIDRs such as 10\.244\.0\.0\/16, got "garbage"/,
    ],
    [
      { ...base('openstack'), clusterCIDR: '10.0.0.0/8,10.1.0.0/16' },
      ['--provider', 'openstack', '--cluster-cidr', '10.0.0.0/8,10.1.0.0/16'],
      /clusterCIDR: two CIDRs of one family/,
      /--cluster-cidr: two IPv4 CIDRs given/,
    ],
    [
      { ...base('openstack'), clusterCIDR: '10.0.0.0/8,fd00::/64,10.1.0.0/16' },
      ['--provider', 'openstack', '--cluster-cidr', '10.0.0.0/8,fd00::/64,10.1.0.0/16'],
      /clusterCIDR: 3 CIDRs given, at most 2/,
      /--cluster-cidr: 3 CIDRs given, at most 2/,
    ],
    [
      { ...base('digitalocean'), replicas: 2.9 },
      ['--provider', 'digitalocean', '--replicas', '2.9'],
      /replicas: expected a whole number of at least 1, got 2\.9/,
      /--replicas: Expected an integer/,
    ],
    [
      { ...base('digitalocean'), replicas: 1.5, leaderElection: { enabled: false } },
      ['--provider', 'digitalocean', '--replicas', '1.5', '--no-leader-elect'],
      /replicas: expected a whole number of at least 1, got 1\.5/,
      /--replicas: Expected an integer/,
    ],
    [
      { ...base('digitalocean'), replicas: 'three' },
      ['--provider', 'digitalocean', '--replicas', 'three'],
      /replicas: expected a whole number of at least 1, got three/,
      /--replicas: Expected an integer/,
    ],
    [
      { ...base('digitalocean'), replicas: 0 },
      ['--provider', 'digitalocean', '--replicas', '0'],
      /replicas: expected a whole number of at least 1, got 0/,
      /--replicas: Expected an integer greater than or equal to 1/,
    ],
    [
      { ...base('digitalocean'), image: { repository: REPOSITORY, pullPolicy: 'Sometimes' } },
      ['--provider', 'digitalocean', '--image-pull-policy', 'Sometimes'],
      /image\.pullPolicy: expected one of IfNotPresent, Always, Never, got "Sometimes"/,
      /--image-pull-policy: expected one of IfNotPresent, Always, Never/,
    ],
    [
      {
        ...base('digitalocean'),
        metrics: { serviceMonitor: true, scraper: { namespace: 'Bad NS', name: 'x' } },
      },
      ['--provider', 'digitalocean', '--service-monitor', '--metrics-scraper', 'Bad NS/x'],
      /metrics\.scraper: expected a ServiceAccount's namespace and name .*got "Bad NS"\/"x"/,
      /--metrics-scraper: expected namespace\/name/,
    ],
    [
      {
        ...base('digitalocean'),
        metrics: { serviceMonitor: true, scraper: { namespace: 'ns', name: 'x/y' } },
      },
      ['--provider', 'digitalocean', '--service-monitor', '--metrics-scraper', 'ns/x/y'],
      /metrics\.scraper: expected a ServiceAccount's namespace and name/,
      /--metrics-scraper: expected namespace\/name/,
    ],
    [
      { ...base('digitalocean'), nodeSelector: { 'bad key!': 'v v' } },
      ['--provider', 'digitalocean', '--node-selector', 'bad key!=v v'],
      /nodeSelector: expected label keys and values .*got "bad key!": "v v"/,
      /--node-selector: expected label=value pairs/,
    ],
    [
      { ...base('digitalocean'), nodeSelector: { pool: 'v v' } },
      ['--provider', 'digitalocean', '--node-selector', 'pool=v v'],
      /nodeSelector: expected label keys and values/,
      /--node-selector: expected label=value pairs/,
    ],
    [
      { ...base('digitalocean'), env: { 'HTTPS-PROXY': 'http://p:3128' } },
      ['--provider', 'digitalocean', '--env', 'HTTPS-PROXY=http://p:3128'],
      /env: expected variable names .*got "HTTPS-PROXY"/,
      /--env: expected NAME=VALUE/,
    ],
    [
      { ...base('digitalocean'), env: { NODE_OPTIONS: '--max-old-space-size=512' } },
      ['--provider', 'digitalocean', '--env', 'NODE_OPTIONS=--max-old-space-size=512'],
      /env: NODE_OPTIONS is set by ccm itself/,
      /--env: NODE_OPTIONS is set by ccm itself/,
    ],
    [
      { ...base('digitalocean'), env: { HTTPS_PROXY: { url: 'x' } } },
      ['--provider', 'digitalocean', '--env', 'HTTPS_PROXY'],
      /env: the value of HTTPS_PROXY must be a string, got map/,
      /--env: expected NAME=VALUE/,
    ],
  ];

  it.each(BOTH)('%j: refused by both, in one line each', async (values, flags, chartLine, ccmLine) => {
    const { result } = await helmTemplate(values);
    expect(result.exitCode, result.stdout).not.toBe(0);
    expect(result.stderr).toMatch(chartLine);
    expect(result.stderr.split('\n').filter((l) => l.startsWith('Error:'))).toHaveLength(1);
    const printed = await ccm(['manifests', '--image', IMAGE, ...flags]);
    expect(printed.exitCode, printed.stdout).toBe(2);
    expect(printed.stderr).toMatch(ccmLine);
    expect(printed.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('values.schema.json: a misspelt key or a wrong type is refused before anything renders', async () => {
    const refused: [Record<string, unknown>, RegExp][] = [
      [
        { ...base('openstack'), clustercidr: '10.244.0.0/16' },
        /additional properties 'clustercidr' not allowed/,
      ],
      [
        { ...base('openstack'), leaderElection: { enable: false } },
        /additional properties 'enable' not allowed/,
      ],
      [{ ...base('openstack'), anyNode: 'always' }, /at '\/anyNode': got string, want boolean/],
      [{ ...base('openstack'), extraArgs: '--concurrency=4' }, /at '\/extraArgs': got string, want array/],
      [{ ...base('openstack'), env: ['HTTPS_PROXY=x'] }, /at '\/env': got array, want object/],
    ];
    for (const [values, message] of refused) {
      const { result } = await helmTemplate(values);
      expect(result.exitCode, JSON.stringify(values)).not.toBe(0);
      expect(result.stderr).toMatch(message);
    }
    // The flags of the same mistakes are refused too.
    const misspelt = await ccm([
      'manifests',
      '--provider',
      'openstack',
      '--image',
      IMAGE,
      '--clustercidr',
      'x',
    ]);
    expect(misspelt.exitCode).toBe(2);
  });

  it('takes, as ccm manifests does, an integral replicas given as a float and a dual-stack CIDR', async () => {
    const chart = await helmTemplate({
      ...base('openstack'),
      replicas: 3.0,
      clusterCIDR: '10.244.0.0/16, fd00:10:244::/56',
    });
    expect(chart.result.exitCode, chart.result.stderr).toBe(0);
    const printed = await ccm([
      'manifests',
      '--image',
      IMAGE,
      '--provider',
      'openstack',
      '--replicas',
      '3',
      '--cluster-cidr',
      '10.244.0.0/16, fd00:10:244::/56',
    ]);
    expect(printed.exitCode, printed.stderr).toBe(0);
    const manifests = objectsOf(printed.stdout).filter((o) => o.kind !== 'Namespace');
    const byKey = new Map(manifests.map((o) => [key(o), o]));
    for (const object of chart.objects) expect(object, key(object)).toEqual(byKey.get(key(object)));
  });
});

describe('helm install and helm upgrade against the test API server', () => {
  let cp: ControlPlane;
  let kubeconfig: string;
  let kc: KubeConfig;

  beforeAll(async () => {
    cp = await startControlPlane();
    kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    kc.setCurrentContext('fixtures');
    // helm as the fixtures admin (cluster-admin), as an operator installs a cloud controller.
    kubeconfig = join(tempDir('ccm-helm-kube-'), 'kubeconfig');
    writeFileSync(kubeconfig, kc.exportConfig());
  });
  afterAll(async () => {
    await cp?.stop();
  });

  const apps = () => kc.makeApiClient(AppsV1Api);
  const rbac = () => kc.makeApiClient(RbacAuthorizationV1Api);
  const absent = (p: Promise<unknown>) =>
    p.then(
      () => false,
      (err: { code?: number }) => err.code === 404,
    );
  /** Whether the API server lets the ServiceAccount `get /metrics` (what ccm's authorisation asks). */
  const mayScrape = async (namespace: string, name: string) =>
    (
      await kc.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
        body: {
          spec: {
            user: `system:serviceaccount:${namespace}:${name}`,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
            nonResourceAttributes: { path: '/metrics', verb: 'get' },
          },
        },
      })
    ).status?.allowed;

  it('installs the objects, and an upgrade changes what its values change', async () => {
    const install = await helm(
      ['install', 'ccm', CHART, '--namespace', 'kube-system', '-f', valuesFile(base('digitalocean'))],
      kubeconfig,
    );
    expect(install.exitCode, install.stderr).toBe(0);
    // Every object of the release exists, and they are those ccm manifests prints for the same choices.
    const release = objectsOf(
      (await helm(['get', 'manifest', 'ccm', '--namespace', 'kube-system'], kubeconfig)).stdout,
    );
    const printed = objectsOf(
      (await ccm(['manifests', '--provider', 'digitalocean', '--image', IMAGE])).stdout,
    );
    expect(release.map(key).sort()).toEqual(printed.map(key).sort());
    const objects = KubernetesObjectApi.makeApiClient(kc);
    for (const o of release) {
      const read = await objects.read({
        apiVersion: o.apiVersion as string,
        kind: o.kind,
        metadata: o.metadata,
      });
      expect(read.metadata?.annotations?.['meta.helm.sh/release-name'], key(o)).toBe('ccm');
    }
    const ds = await apps().readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' });
    expect(ds.spec?.template.spec?.containers[0]?.image).toBe(IMAGE);
    expect(ds.spec?.template.spec?.containers[0]?.args).toContain(
      '--credentials-secret=kube-system/digitalocean',
    );
    expect((await rbac().readClusterRole({ name: 'system:ccm' })).rules?.length).toBeGreaterThan(3);
    const credentials = await rbac().readNamespacedRole({
      name: 'ccm:credentials',
      namespace: 'kube-system',
    });
    expect(credentials.rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['digitalocean'] },
    ]);
    expect(
      await absent(
        kc
          .makeApiClient(BatchV1Api)
          .readNamespacedCronJob({ name: 'ccm-nodes-init', namespace: 'kube-system' }),
      ),
    ).toBe(true);
    expect(await mayScrape('default', 'prometheus')).toBe(false);

    // The ServiceMonitor's CRD, as the Prometheus Operator installs it (its schema left open here).
    await kc.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
      body: {
        metadata: { name: 'servicemonitors.monitoring.coreos.com' },
        spec: {
          group: 'monitoring.coreos.com',
          names: {
            kind: 'ServiceMonitor',
            plural: 'servicemonitors',
            singular: 'servicemonitor',
            listKind: 'ServiceMonitorList',
          },
          scope: 'Namespaced',
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    });
    const upgraded = {
      ...base('digitalocean'),
      image: { repository: REPOSITORY, tag: '0.2.0' },
      anyNode: true,
      cronjob: { enabled: true },
      clusterCIDR: '10.244.0.0/16',
      metrics: { serviceMonitor: true, scraper: { namespace: 'default', name: 'prometheus' } },
    };
    // The CRD is served a moment after it is created: helm's first try may not find the kind.
    let upgrade = await helm(
      ['upgrade', 'ccm', CHART, '--namespace', 'kube-system', '-f', valuesFile(upgraded)],
      kubeconfig,
    );
    for (let i = 0; i < 10 && upgrade.exitCode !== 0 && /ServiceMonitor/.test(upgrade.stderr); i++) {
      await new Promise((r) => setTimeout(r, 1000));
      upgrade = await helm(
        ['upgrade', 'ccm', CHART, '--namespace', 'kube-system', '-f', valuesFile(upgraded)],
        kubeconfig,
      );
    }
    expect(upgrade.exitCode, upgrade.stderr).toBe(0);
    // The DaemonSet became a Deployment of two replicas, with the new image and the CIDR.
    expect(await absent(apps().readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' }))).toBe(
      true,
    );
    const deployment = await apps().readNamespacedDeployment({ name: 'ccm', namespace: 'kube-system' });
    expect(deployment.spec?.replicas).toBe(2);
    const container = deployment.spec?.template.spec?.containers[0];
    expect(container?.image).toBe(`${REPOSITORY}:0.2.0`);
    expect(container?.args).toContain('--cluster-cidr=10.244.0.0/16');
    // The CronJob and its own identity; the credentials binding names both ServiceAccounts.
    const cron = await kc
      .makeApiClient(BatchV1Api)
      .readNamespacedCronJob({ name: 'ccm-nodes-init', namespace: 'kube-system' });
    expect(cron.spec?.jobTemplate.spec?.template.spec?.serviceAccountName).toBe('ccm-nodes-init');
    expect(await absent(rbac().readClusterRole({ name: 'system:ccm-nodes-init' }))).toBe(false);
    const binding = await rbac().readNamespacedRoleBinding({
      name: 'ccm:credentials',
      namespace: 'kube-system',
    });
    expect(binding.subjects?.map((s) => s.name)).toEqual(['ccm', 'ccm-nodes-init']);
    // The scraper may now get /metrics, and the ServiceMonitor exists.
    expect(await mayScrape('default', 'prometheus')).toBe(true);
    const list = await helm(['get', 'manifest', 'ccm', '--namespace', 'kube-system'], kubeconfig);
    expect(objectsOf(list.stdout).map(key)).toContain('ServiceMonitor kube-system/ccm');
    const history = await helm(['history', 'ccm', '--namespace', 'kube-system', '-o', 'json'], kubeconfig);
    expect(
      (JSON.parse(history.stdout) as { revision: number; status: string }[]).map((r) => r.status),
    ).toEqual(['superseded', 'deployed']);

    // And back: the PodDisruptionBudget and the scraper's rule go with the values that made them.
    const back = await helm(
      ['upgrade', 'ccm', CHART, '--namespace', 'kube-system', '-f', valuesFile(base('digitalocean'))],
      kubeconfig,
    );
    expect(back.exitCode, back.stderr).toBe(0);
    expect(await absent(apps().readNamespacedDeployment({ name: 'ccm', namespace: 'kube-system' }))).toBe(
      true,
    );
    expect(await absent(apps().readNamespacedDaemonSet({ name: 'ccm', namespace: 'kube-system' }))).toBe(
      false,
    );
    expect(await mayScrape('default', 'prometheus')).toBe(false);

    const uninstall = await helm(['uninstall', 'ccm', '--namespace', 'kube-system'], kubeconfig);
    expect(uninstall.exitCode, uninstall.stderr).toBe(0);
    expect(await absent(rbac().readClusterRole({ name: 'system:ccm' }))).toBe(true);
  }, 240_000);

  const envOf = (o: {
    spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } };
  }) =>
    Object.fromEntries((o.spec?.template?.spec?.containers?.[0]?.env ?? []).map((e) => [e.name, e.value]));

  it('proxy variables of the env value stay when an upgrade turns the DaemonSet into a Deployment', async () => {
    const ns = 'kube-system';
    const proxy = { HTTPS_PROXY: 'http://proxy.corp.example:3128', NO_PROXY: '.corp.example' };
    const values = { ...base('digitalocean'), env: proxy, cronjob: { enabled: true } };
    const install = await helm(
      ['install', 'ccm', CHART, '--namespace', ns, '-f', valuesFile(values)],
      kubeconfig,
    );
    expect(install.exitCode, install.stderr).toBe(0);
    try {
      expect(envOf(await apps().readNamespacedDaemonSet({ name: 'ccm', namespace: ns }))).toMatchObject(
        proxy,
      );
      const cron = await kc
        .makeApiClient(BatchV1Api)
        .readNamespacedCronJob({ name: 'ccm-nodes-init', namespace: ns });
      expect(envOf({ spec: cron.spec?.jobTemplate.spec as never })).toMatchObject(proxy);
      // anyNode: the DaemonSet is deleted and a Deployment made from the chart alone: the value carries them.
      const moved = await helm(
        ['upgrade', 'ccm', CHART, '--namespace', ns, '--reset-then-reuse-values', '--set', 'anyNode=true'],
        kubeconfig,
      );
      expect(moved.exitCode, moved.stderr).toBe(0);
      expect(await absent(apps().readNamespacedDaemonSet({ name: 'ccm', namespace: ns }))).toBe(true);
      const deployment = await apps().readNamespacedDeployment({ name: 'ccm', namespace: ns });
      expect(envOf(deployment)).toEqual({
        HOME: '/tmp',
        NODE_OPTIONS: expect.any(String),
        MALLOC_ARENA_MAX: '1',
        ...proxy,
      });
      // --set env.NAME adds one, keeping the others (a map: helm merges it by name).
      const more = await helm(
        [
          'upgrade',
          'ccm',
          CHART,
          '--namespace',
          ns,
          '--reset-then-reuse-values',
          '--set',
          'env.HTTP_PROXY=http://proxy.corp.example:3128',
        ],
        kubeconfig,
      );
      expect(more.exitCode, more.stderr).toBe(0);
      expect(envOf(await apps().readNamespacedDeployment({ name: 'ccm', namespace: ns }))).toMatchObject({
        ...proxy,
        HTTP_PROXY: 'http://proxy.corp.example:3128',
      });
    } finally {
      await helm(['uninstall', 'ccm', '--namespace', ns], kubeconfig);
    }
  }, 120_000);

  it("the upgrade docs/deploy.md shows works from a chart version without a later chart's value blocks", async () => {
    // The previous version: this chart without the metrics and env values (and the templates reading
    // metrics). The current chart plays the next version.
    const old = join(tempDir('ccm-helm-oldchart-'), 'ccm');
    cpSync(CHART, old, { recursive: true });
    const text = readFileSync(join(old, 'values.yaml'), 'utf8');
    const cut = (t: string, from: string, to: string) => t.slice(0, t.indexOf(from)) + t.slice(t.indexOf(to));
    writeFileSync(
      join(old, 'values.yaml'),
      cut(text.slice(0, text.indexOf('metrics:')), '# Environment variables', "# The cluster's Pod CIDR"),
    );
    expect(readFileSync(join(old, 'values.yaml'), 'utf8')).not.toMatch(/^(env|metrics):/m);
    for (const t of [
      '02-clusterrole-ccm-metrics-reader.yaml',
      '03-clusterrolebinding-ccm-metrics-reader.yaml',
      '11-service-ccm-metrics.yaml',
      '12-servicemonitor-ccm.yaml',
    ])
      rmSync(join(old, 'templates', t));
    const ns = 'kube-system';
    const install = await helm(
      [
        'install',
        'ccm',
        old,
        '--namespace',
        ns,
        '--set',
        'provider=digitalocean',
        '--set',
        `image.repository=${REPOSITORY}`,
      ],
      kubeconfig,
    );
    expect(install.exitCode, install.stderr).toBe(0);
    try {
      // docs/deploy.md, "Helm chart", word for word.
      const docs = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
      const line = docs.split('\n').find((l) => l.startsWith('helm upgrade ccm charts/ccm')) as string;
      expect(line).toContain('--reset-then-reuse-values');
      const upgrade = await helm(
        [
          ...line
            .split(/\s+/)
            .slice(1)
            .map((a) => (a === 'charts/ccm' ? CHART : a)),
        ],
        kubeconfig,
      );
      expect(upgrade.exitCode, upgrade.stderr).toBe(0);
      const deployed = objectsOf(
        (await helm(['get', 'manifest', 'ccm', '--namespace', ns], kubeconfig)).stdout,
      );
      expect(deployed.map(key)).toContain('CronJob kube-system/ccm-nodes-init');
      const values = await helm(
        ['get', 'values', 'ccm', '--namespace', ns, '--all', '-o', 'json'],
        kubeconfig,
      );
      // The user's values kept, the new chart's defaults taken.
      expect(JSON.parse(values.stdout)).toMatchObject({
        provider: 'digitalocean',
        image: { repository: REPOSITORY, tag: '0.2.0' },
        metrics: { serviceMonitor: false },
        env: {},
      });
      // And a release upgraded with --reuse-values (the old chart's values, no metrics block) still renders.
      const reused = await helm(['upgrade', 'ccm', CHART, '--namespace', ns, '--reuse-values'], kubeconfig);
      expect(reused.exitCode, reused.stderr).toBe(0);
    } finally {
      await helm(['uninstall', 'ccm', '--namespace', ns], kubeconfig);
    }
  }, 120_000);
});
