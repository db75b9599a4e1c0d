/**
 * The options of `ccm manifests` that the Helm chart's values map to (#47): replicas, leader
 * election, tolerations, resources, extra arguments, the ServiceMonitor; and their refusals.
 */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/cli/errors.js';
import { mergeQuantities, parseEnv, parseQuantities, parseToleration } from '../../../src/cli/flag-values.js';
import { type K8sObject, type ManifestOptions, renderManifests } from '../../../src/cli/manifests.js';
import { loadProvider } from '../../../src/providers/registry.js';

async function render(extra: Partial<ManifestOptions>): Promise<K8sObject[]> {
  return renderManifests(await loadProvider('digitalocean'), {
    image: 'registry.example.com/ccm:0.1.0',
    namespace: 'kube-system',
    controllers: '*',
    cronjob: true,
    leaseName: 'cloud-controller-manager',
    ...extra,
  });
}

type Pod = {
  tolerations: { key: string }[];
  affinity?: Record<string, unknown>;
  containers: { args: string[]; resources: unknown }[];
};
const podOf = (o: K8sObject | undefined) =>
  (o?.spec as { template: { spec: Pod } } | undefined)?.template.spec as Pod;
const find = (objects: K8sObject[], kind: string, name?: string) =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

describe('ccm manifests: the options of the chart', () => {
  it('--replicas: a Deployment on the control plane, one per Node, with its budget', async () => {
    const objects = await render({ replicas: 3 });
    expect(find(objects, 'DaemonSet')).toBeUndefined();
    const deployment = find(objects, 'Deployment') as K8sObject;
    expect((deployment.spec as { replicas: number }).replicas).toBe(3);
    const affinity = podOf(deployment).affinity as Record<string, unknown>;
    expect(Object.keys(affinity).sort()).toEqual(['nodeAffinity', 'podAntiAffinity']);
    expect(find(objects, 'PodDisruptionBudget')).toBeDefined();
  });

  it('--no-leader-elect: one replica, no Lease and no Role for it; refused for more than one pod', async () => {
    const objects = await render({ replicas: 1, leaderElect: false });
    const args = podOf(find(objects, 'Deployment')).containers[0]?.args ?? [];
    expect(args).toContain('--no-leader-elect');
    expect(args.filter((a) => a.startsWith('--leader-elect'))).toEqual([]);
    expect(find(objects, 'Role', 'ccm:leader-election')).toBeUndefined();
    await expect(render({ leaderElect: false })).rejects.toThrow(UsageError);
    await expect(render({ leaderElect: false, replicas: 2 })).rejects.toThrow(/--replicas 1/);
    await expect(render({ replicas: 0 })).rejects.toThrow(/--replicas: expected a whole number/);
  });

  it('tolerations reach both pods after the fixed ones; resources and extra arguments reach `ccm run`', async () => {
    const objects = await render({
      tolerations: [parseToleration('dedicated=ccm:NoSchedule')],
      resources: { requests: parseQuantities('cpu=100m,memory=300Mi') },
      extraArgs: ['--concurrency=4'],
    });
    const run = podOf(find(objects, 'DaemonSet'));
    expect(run.tolerations.at(-1)).toEqual({
      key: 'dedicated',
      operator: 'Equal',
      value: 'ccm',
      effect: 'NoSchedule',
    });
    expect(run.tolerations).toHaveLength(5);
    expect(run.containers[0]?.resources).toEqual({ requests: { cpu: '100m', memory: '300Mi' } });
    expect(run.containers[0]?.args.at(-1)).toBe('--concurrency=4');
    const cron = find(objects, 'CronJob')?.spec as {
      jobTemplate: { spec: { template: { spec: Pod } } };
    };
    const nodesInit = cron.jobTemplate.spec.template.spec;
    expect(nodesInit.tolerations).toHaveLength(5);
    expect(nodesInit.containers[0]?.args).not.toContain('--concurrency=4');
  });

  it('--toleration and --requests read as kubectl taint and container resources name them', () => {
    expect(parseToleration('node-role.kubernetes.io/system:NoExecute')).toEqual({
      key: 'node-role.kubernetes.io/system',
      operator: 'Exists',
      effect: 'NoExecute',
    });
    expect(() => parseToleration('dedicated=ccm')).toThrow(UsageError);
    expect(() => parseToleration('dedicated:Sometimes')).toThrow(UsageError);
    expect(parseQuantities('memory=1Gi')).toEqual({ memory: '1Gi' });
    expect(() => parseQuantities('memory=lots')).toThrow(UsageError);
    expect(() => parseQuantities('')).toThrow(UsageError);
  });

  it('--requests/--limits change the default by resource, as helm merges the chart value: none removes', () => {
    const requests = { cpu: '50m', memory: '256Mi' };
    expect(mergeQuantities(requests, parseQuantities('cpu=100m'))).toEqual({ cpu: '100m', memory: '256Mi' });
    expect(mergeQuantities(requests, parseQuantities('memory=none'))).toEqual({ cpu: '50m' });
    expect(mergeQuantities(requests, parseQuantities('cpu=none,memory=none'))).toEqual({});
    expect(mergeQuantities({ memory: '512Mi' }, parseQuantities('none'))).toBeUndefined();
    expect(mergeQuantities(requests, parseQuantities('ephemeral-storage=1Gi'))).toEqual({
      ...requests,
      'ephemeral-storage': '1Gi',
    });
    expect(() => parseQuantities('none,cpu=1')).toThrow(UsageError);
  });

  it("--env: both pods get the variables after those ccm sets, in name order; ccm's own are refused", async () => {
    const objects = await render({
      env: { NO_PROXY: '.corp.example', HTTPS_PROXY: 'http://proxy.corp.example:3128' },
    });
    const cron = find(objects, 'CronJob')?.spec as {
      jobTemplate: { spec: { template: { spec: Pod } } };
    };
    for (const pod of [podOf(find(objects, 'DaemonSet')), cron.jobTemplate.spec.template.spec]) {
      const env = (pod.containers[0] as unknown as { env: { name: string; value: string }[] }).env;
      expect(env.slice(-2)).toEqual([
        { name: 'HTTPS_PROXY', value: 'http://proxy.corp.example:3128' },
        { name: 'NO_PROXY', value: '.corp.example' },
      ]);
      expect(env[0]).toEqual({ name: 'HOME', value: '/tmp' });
    }
    expect(parseEnv('A_B=x=y')).toEqual(['A_B', 'x=y']);
    expect(parseEnv('EMPTY=')).toEqual(['EMPTY', '']);
    for (const bad of ['NOEQUALS', '=x', '1A=x', 'A-B=x', 'A B=x'])
      expect(() => parseEnv(bad), bad).toThrow(/--env: expected NAME=VALUE/);
    for (const own of ['HOME', 'NODE_OPTIONS', 'MALLOC_ARENA_MAX'])
      expect(() => parseEnv(`${own}=x`)).toThrow(/is set by ccm itself/);
    await expect(render({ env: { HOME: '/x' } })).rejects.toThrow(/HOME is set by ccm itself/);
  });

  it('--service-monitor: the Service, the ServiceMonitor and get /metrics for the scraper alone', async () => {
    const objects = await render({
      metrics: { scraper: { namespace: 'monitoring', name: 'prometheus-k8s' } },
    });
    const role = find(objects, 'ClusterRole', 'ccm:metrics-reader') as K8sObject;
    expect(role.rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    expect((find(objects, 'ClusterRoleBinding', 'ccm:metrics-reader') as K8sObject).subjects).toEqual([
      { kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'monitoring' },
    ]);
    const service = find(objects, 'Service', 'ccm-metrics') as K8sObject;
    const monitor = find(objects, 'ServiceMonitor', 'ccm') as K8sObject;
    // The ServiceMonitor selects the Service, and the Service the controller's pods.
    expect((monitor.spec as { selector: { matchLabels: unknown } }).selector.matchLabels).toEqual(
      service.metadata.labels,
    );
    expect((service.spec as { selector: unknown }).selector).toEqual(
      ((find(objects, 'DaemonSet') as K8sObject).spec as { selector: { matchLabels: unknown } }).selector
        .matchLabels,
    );
    expect(find(await render({}), 'ServiceMonitor')).toBeUndefined();
  });
});
