/**
 * What the chaos run needs of one cloud: its simulator, the credentials Secret `ccm run` reads (good,
 * rotated, bad), instances made, deleted, stopped and started behind ccm's back, its load balancers
 * with their addresses and the Service each belongs to, and the annotations a person might change
 * while a load balancer is being made.
 */
import { type CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { loadBalancerName } from '../../src/controllers/service.js';
import { DigitalOceanSimulator, errorBody as doErrorBody } from '../clouds/digitalocean/server.js';
import { APP_CREDENTIAL, OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { digitalOceanSecret } from '../helpers/cloud-world.js';

export type ChaosCloudName = 'digitalocean' | 'openstack';

/** A Service as the load balancer checks see it. */
export interface ServiceView {
  name: string;
  uid: string;
  annotations: Record<string, string>;
  /** Every name the run ever gave its load balancer (an annotation), besides the default. */
  givenNames: Set<string>;
}

export interface CloudLoadBalancer {
  id: string;
  /** The addresses a Service's ingress may show for it. */
  ips: string[];
  /** The Service it is made for (name), or undefined when none of them claims it. */
  service?: string;
}

export type Credentials = 'good' | 'rotated' | 'bad';

export interface ChaosCloud {
  name: ChaosCloudName;
  stop(): Promise<void>;
  upstream: string;
  errorBody(status: number): unknown;
  /** The load balancer creations, whose bodies the proxy keeps. */
  isCreate(method: string, path: string): boolean;
  /** The Service a kept creation was for (by the names and tags it carried). */
  createdFor(body: string, services: ServiceView[]): string | undefined;
  /** A cloud request that changes nothing (a token request), allowed of any replica. */
  isReadOnly(method: string, path: string): boolean;
  secret: { namespace: string; name: string };
  /** Writes the credentials Secret, pointed at the proxy. */
  writeSecret(api: CoreV1Api, proxyUrl: string, credentials: Credentials): Promise<void>;
  /** ccm run's cloud flags and environment, pointed at the proxy. */
  runArgs(proxyUrl: string): { args: string[]; env: Record<string, string> };
  addInstance(name: string, n: number): string;
  removeInstance(id: string): void;
  setRunning(id: string, running: boolean): void;
  instanceIds(): string[];
  loadBalancers(services: ServiceView[]): CloudLoadBalancer[];
  /** Annotations to change on a Service being created, with values to draw from. */
  annotationChanges: { key: string; values: string[] }[];
}

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

async function upsertSecret(
  api: CoreV1Api,
  namespace: string,
  name: string,
  stringData: Record<string, string>,
) {
  try {
    await api.patchNamespacedSecret({ name, namespace, body: { stringData } }, MERGE_PATCH);
  } catch (err) {
    if ((err as { code?: number }).code !== 404) throw err;
    await api.createNamespacedSecret({ namespace, body: { metadata: { name, namespace }, stringData } });
  }
}

const ip = (prefix: string, n: number) => `${prefix}.${(n >> 8) & 255}.${n & 255}`;

async function digitalocean(): Promise<ChaosCloud> {
  // No rate limits here: chaos injects its own 429s (faults.ts 'cloud-429') through its proxy, and a
  // run's length is set by its faults, not by DigitalOcean's 250 a minute and 5,000 an hour, which
  // the simulator's unit tests and the services tests hold ccm to.
  const sim = await DigitalOceanSimulator.start({ burstLimitPerMinute: 100_000, limitPerHour: 1_000_000 });
  const rotatedToken = 'dop_v1_rotated00000000000000000000000';
  sim.acceptToken(rotatedToken);
  const tokens: Record<Credentials, string> = {
    good: sim.token,
    rotated: rotatedToken,
    bad: 'dop_v1_revoked00000000000000000000000',
  };
  const namesOf = (s: ServiceView) => new Set([loadBalancerName(s.uid), ...s.givenNames]);
  return {
    name: 'digitalocean',
    stop: () => sim.stop(),
    upstream: sim.url,
    errorBody: (status) => doErrorBody(status),
    isCreate: (method, path) => method === 'POST' && path.split('?')[0] === '/v2/load_balancers',
    createdFor: (body, services) => {
      const name = (JSON.parse(body) as { name?: string }).name ?? '';
      return services.find((s) => namesOf(s).has(name))?.name;
    },
    isReadOnly: () => false,
    secret: { namespace: 'kube-system', name: 'digitalocean' },
    async writeSecret(api, _proxyUrl, credentials) {
      const doc = digitalOceanSecret(tokens[credentials]);
      await upsertSecret(api, 'kube-system', 'digitalocean', doc.stringData as Record<string, string>);
    },
    runArgs: (proxyUrl) => ({
      args: ['--provider', 'digitalocean', '--credentials-secret', 'kube-system/digitalocean'],
      env: { DO_OVERRIDE_URL: proxyUrl },
    }),
    addInstance: (name, n) =>
      String(sim.addDroplets({ name, privateIP: ip('10.20', n), publicIP: ip('198.51', n) })[0]?.id),
    removeInstance: (id) => sim.removeDroplet(Number(id)),
    setRunning: (id, running) => {
      const droplet = sim.droplets.get(Number(id));
      if (droplet) droplet.status = running ? 'active' : 'off';
    },
    instanceIds: () => [...sim.droplets.keys()].map(String),
    loadBalancers: (services) =>
      [...sim.loadBalancers.values()].map((lb) => {
        const id = String(lb.id);
        const owner =
          services.find((s) => s.annotations['kubernetes.digitalocean.com/load-balancer-id'] === id) ??
          services.find((s) => namesOf(s).has(String(lb.name)));
        return { id, ips: lb.ip ? [String(lb.ip)] : [], service: owner?.name };
      }),
    annotationChanges: [
      { key: 'service.beta.kubernetes.io/do-loadbalancer-size-unit', values: ['1', '2', '3'] },
      { key: 'service.beta.kubernetes.io/do-loadbalancer-healthcheck-path', values: ['/healthz', '/ready'] },
      // A name given while the first creation may be in flight: a second one under the new name
      // would be a load balancer created twice.
      { key: 'service.beta.kubernetes.io/do-loadbalancer-name', values: ['name'] },
    ],
  };
}

async function openstack(): Promise<ChaosCloud> {
  const sim = await new OpenStackSimulator().start();
  sim.octavia.settleAfterReads = 1;
  const cloudConf = (proxyUrl: string, credentials: Credentials) => {
    const conf = sim.cloudConf('occm-cloud-config', `${proxyUrl}/identity/v3`);
    if (credentials === 'bad') return conf.replace('password=passw0rd', 'password=revoked');
    if (credentials === 'good') return conf;
    // Rotated: the same project through an application credential instead of the password.
    return conf
      .replace('username=admin\n', '')
      .replace('password=passw0rd\n', '')
      .replace(
        '#application-credential-id=\n#application-credential-secret=',
        `application-credential-id=${APP_CREDENTIAL.id}\napplication-credential-secret=${APP_CREDENTIAL.secret}`,
      );
  };
  const tagged = (tags: unknown) =>
    ((tags as string[] | undefined) ?? []).find((t) => t.startsWith('ccm-service:default/'))?.slice(20);
  return {
    name: 'openstack',
    stop: () => sim.stop(),
    upstream: sim.url,
    errorBody: (status) => ({
      error: { code: status, message: 'injected by the chaos run', title: 'Error' },
    }),
    isCreate: (method, path) => method === 'POST' && /\/lbaas\/loadbalancers$/.test(path.split('?')[0] ?? ''),
    createdFor: (body) =>
      tagged((JSON.parse(body) as { loadbalancer?: { tags?: string[] } }).loadbalancer?.tags),
    isReadOnly: (method, path) => method === 'POST' && /\/auth\/tokens$/.test(path.split('?')[0] ?? ''),
    secret: { namespace: 'kube-system', name: 'cloud-config' },
    async writeSecret(api, proxyUrl, credentials) {
      await upsertSecret(api, 'kube-system', 'cloud-config', {
        'cloud.conf': cloudConf(proxyUrl, credentials),
      });
    },
    runArgs: () => ({
      args: ['--provider', 'openstack', '--credentials-secret', 'kube-system/cloud-config'],
      env: {},
    }),
    addInstance: (name, n) =>
      String(sim.addServer({ name, addresses: { private: [{ addr: ip('10.20', n) }] } }).id),
    removeInstance: (id) => {
      sim.servers.delete(id);
    },
    setRunning: (id, running) => {
      const server = sim.servers.get(id);
      if (server) server.status = running ? 'ACTIVE' : 'SHUTOFF';
    },
    instanceIds: () => [...sim.servers.keys()],
    loadBalancers: () =>
      [...sim.octavia.loadBalancers.values()].map(({ lb }) => {
        const fips = [...sim.octavia.floatingIps.values()]
          .filter((f) => f.port_id === lb.vip_port_id)
          .map((f) => String(f.floating_ip_address));
        return { id: String(lb.id), ips: [String(lb.vip_address), ...fips], service: tagged(lb.tags) };
      }),
    annotationChanges: [
      { key: 'service.beta.kubernetes.io/openstack-internal-load-balancer', values: ['true', 'false'] },
      { key: 'loadbalancer.openstack.org/connection-limit', values: ['100', '-1', '5000'] },
      { key: 'loadbalancer.openstack.org/timeout-client-data', values: ['50000', '20000'] },
    ],
  };
}

export function startCloud(name: ChaosCloudName): Promise<ChaosCloud> {
  if (name === 'digitalocean') return digitalocean();
  if (name === 'openstack') return openstack();
  throw new Error(`CHAOS_CLOUD=${name}: the chaos run knows digitalocean and openstack`);
}
