/**
 * What the clouds' official controllers leave in a cluster, for the tests of `ccm migrate` and
 * `ccm doctor`: their workloads, and their record of a Service they serve.
 */
import type { CoreV1Api, V1DaemonSet, V1Deployment, V1LoadBalancerIngress } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { CCM_USER, type ControlPlane } from '../controlplane/harness.js';
import type { CliResult } from './cli.js';
import { type InProcess, until } from './run.js';
import { MERGE_PATCH } from './services.js';

/** The annotation by which `ccm migrate --yes` records a Service's hand-over. */
export const ADOPTED = 'ccm.io/adopted-load-balancer';

/** The service controller's finalizer (k8s.io/cloud-provider service/helpers/helper.go). */
export const LB_FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';

/**
 * DigitalOcean's own Deployment (releases/digitalocean-cloud-controller-manager/v0.1.68.yml of
 * digitalocean/digitalocean-cloud-controller-manager): its name and image, --leader-elect=false.
 */
export function officialDigitalOceanDeployment(replicas: number): V1Deployment {
  const name = 'digitalocean-cloud-controller-manager';
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'kube-system' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            {
              name,
              image: `digitalocean/${name}:v0.1.68`,
              command: [`/bin/${name}`, '--leader-elect=false'],
            },
          ],
        },
      },
    },
  };
}

/**
 * cloud-provider-openstack's published DaemonSet
 * (manifests/controller-manager/openstack-cloud-controller-manager-ds.yaml): its cluster name comes
 * from $(CLUSTER_NAME).
 */
export function officialOpenStackDaemonSet(clusterName = 'kubernetes'): V1DaemonSet {
  const name = 'openstack-cloud-controller-manager';
  return {
    metadata: { name, namespace: 'kube-system' },
    spec: {
      selector: { matchLabels: { 'k8s-app': name } },
      template: {
        metadata: { labels: { 'k8s-app': name } },
        spec: {
          containers: [
            {
              name,
              image: `registry.k8s.io/provider-os/${name}:v1.36.0`,
              args: [
                `/bin/${name}`,
                '--v=1',
                '--cluster-name=$(CLUSTER_NAME)',
                '--cloud-config=$(CLOUD_CONFIG)',
                '--cloud-provider=openstack',
                '--use-service-account-credentials=false',
                '--bind-address=127.0.0.1',
              ],
              env: [
                { name: 'CLOUD_CONFIG', value: '/etc/config/cloud.conf' },
                { name: 'CLUSTER_NAME', value: clusterName },
              ],
            },
          ],
        },
      },
    },
  };
}

/**
 * The body of a load balancer as DigitalOcean's official controller builds it for one HTTP port of a
 * Service: regional, its droplets, port 80 to the NodePort, the kube-proxy health check on 10256.
 */
export function officialDigitalOceanLoadBalancer(
  name: string,
  dropletIds: readonly unknown[],
  nodePort: number,
): Record<string, unknown> {
  return {
    name,
    region: 'fra1',
    type: 'REGIONAL',
    droplet_ids: [...dropletIds],
    forwarding_rules: [
      { entry_protocol: 'tcp', entry_port: 80, target_protocol: 'tcp', target_port: nodePort },
    ],
    health_check: {
      protocol: 'http',
      port: 10256,
      path: '/healthz',
      check_interval_seconds: 3,
      response_timeout_seconds: 5,
      unhealthy_threshold: 3,
      healthy_threshold: 5,
    },
    tags: [],
  };
}

/**
 * The official controller's record of a Service it serves: the finalizer, its own annotations (a
 * null removes one) and the load balancer's address as the ingress.
 */
export async function recordServedByOfficial(
  api: CoreV1Api,
  name: string,
  record: { annotations?: Record<string, string | null>; ingress: V1LoadBalancerIngress },
  namespace = 'default',
): Promise<void> {
  const metadata = {
    finalizers: [LB_FINALIZER],
    ...(record.annotations ? { annotations: record.annotations } : {}),
  };
  await api.patchNamespacedService({ name, namespace, body: { metadata } }, MERGE_PATCH);
  await api.patchNamespacedServiceStatus(
    { name, namespace, body: { status: { loadBalancer: { ingress: [record.ingress] } } } },
    MERGE_PATCH,
  );
}

/** Until ccm logged that it refused the hand-over of Service `name` (it has looked at it, and said why). */
export function untilHandOverRefused(ccm: InProcess, name: string): Promise<boolean> {
  return until(
    `the hand-over of ${name} refused`,
    async () => ccm.logs.some((l) => l.includes(name) && /not handed to ccm for this Service/.test(l)),
    30_000,
  );
}

/**
 * `ccm migrate -o json`, the dry run: expects it ran clean and wrote nothing to Kubernetes; returns
 * its plan and the count of ccm's writes so far.
 */
export async function expectCleanDryRun(
  migrate: (...args: string[]) => Promise<CliResult>,
  cp: ControlPlane,
): Promise<{ plan: MigratePlan; writes: number }> {
  const writes = (await cp.writes(CCM_USER)).length;
  const dry = await migrate('-o', 'json');
  expect(dry.stderr).toBe('');
  expect(dry.exitCode).toBe(0);
  expect((await cp.writes(CCM_USER)).length).toBe(writes);
  return { plan: JSON.parse(dry.stdout), writes };
}

/** The plan's JSON as parsed, read field by field by each test. */
type MigratePlan = ReturnType<typeof JSON.parse>;

/**
 * Deletes Service `name` and waits until ccm's cleanup looked for its load balancer (a request of
 * the simulator's log that `isLookup` matches): ccm is done with it then.
 */
export async function deleteUntilCleanupLooked<R>(
  api: CoreV1Api,
  name: string,
  requests: R[],
  isLookup: (request: R) => boolean,
): Promise<void> {
  const seen = requests.length;
  await api.deleteNamespacedService({ name, namespace: 'default' });
  await until('the cleanup looked', async () => requests.slice(seen).some(isLookup), 30_000);
}
