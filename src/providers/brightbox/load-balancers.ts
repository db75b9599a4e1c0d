import { isIP } from 'node:net';
import { InvalidConfigError, isNotFound, RetryableError } from '../errors.js';
import { parseProviderID } from '../provider-id.js';
import type {
  LoadBalancerAdoption,
  LoadBalancerIngress,
  LoadBalancerRequest,
  LoadBalancerStatus,
  LoadBalancers,
} from '../types.js';
import { brightboxAdoption } from './adoption.js';
import { ANNOTATIONS, type BalancerSettings, parseAnnotations } from './annotations.js';
import type {
  ApiCloudIP,
  ApiFirewallPolicy,
  ApiHealthcheck,
  ApiListener,
  ApiLoadBalancer,
  ApiServerGroup,
  BrightboxClient,
  CloudIPRef,
} from './client.js';
import { type GoneServers, SCHEME, SERVER_ID } from './instances.js';

/**
 * Load balancers as the official controller builds them (load_balancer_cloud.go): per Service a
 * cloud IP, a dedicated server group holding the backend servers with a firewall policy of one rule
 * opening the node ports, a load balancer whose listeners send to the node ports, and the cloud IP
 * mapped to it. Dedicated groups and policies mean Services never race on shared rules.
 *
 * Every step reads before it writes, so a call that stopped anywhere is finished by the next one
 * without duplicates; nothing waits in a loop: a balancer still being built, or still being
 * deleted, is a RetryableError.
 * Everything ccm creates is named `<service>.<namespace>.<request name>.<cluster id>`: only a
 * resource with exactly this name is ever changed or deleted, so another cluster's resources (other
 * cluster id) and anything made by hand are never touched. A cloud IP named by annotation or
 * spec.loadBalancerIP is mapped and unmapped, never renamed or released.
 */

/** How long to wait before looking at a balancer Brightbox is still building. */
export const BUILDING_RETRY_MS = 5_000;
const FAILED_RETRY_MS = 60_000;
/** The official controller opens the node ports to Brightbox's private network, where balancers live. */
export const RULE_SOURCE = '10.0.0.0/8';
const RULE_PROTOCOL = 'tcp';

// What Brightbox fills in when a value is left out (gobrightbox's load balancer fixture); sent
// explicitly so that removing an annotation puts the default back.
const DEFAULTS = {
  policy: 'least-connections',
  listenerTimeout: 50_000,
  interval: 5_000,
  timeout: 5_000,
  thresholdUp: 3,
  thresholdDown: 3,
} as const;

const SSL_PORT = 443;

export function brightboxLoadBalancers(client: BrightboxClient, gone?: GoneServers): LoadBalancers {
  return new BrightboxLoadBalancers(client, gone);
}

/** The name every resource ccm makes for this Service carries: its ownership marker. */
export function ownedName(req: LoadBalancerRequest): string {
  return `${req.service.name}.${req.service.namespace}.${req.name}.${req.clusterID}`;
}

function describe(req: LoadBalancerRequest): string {
  return `ccm load balancer of Service ${req.service.namespace}/${req.service.name}, cluster ${req.clusterID}`;
}

interface WantListener extends ApiListener {
  timeout: number;
  /** Left out when not wanted: gobrightbox omits it (omitempty) and sends no null. */
  proxy_protocol?: string;
}

interface Plan {
  settings: BalancerSettings;
  serverIDs: string[];
  listeners: WantListener[];
  healthcheck: Required<ApiHealthcheck>;
  policy: string;
  https: boolean;
  firewallPorts: string;
}

/** Checks the Service against what Brightbox load balancers can do and builds the wanted shape. */
export function planBalancer(req: LoadBalancerRequest, gone?: GoneServers): Plan {
  const settings = parseAnnotations(req.service.annotations);
  const svc = `Service ${req.service.namespace}/${req.service.name}`;
  if (req.ports.length === 0) throw new InvalidConfigError(`${svc} has no ports to balance`);
  for (const p of req.ports) {
    if (p.protocol !== 'TCP') {
      throw new InvalidConfigError(
        `${svc} port ${p.name || p.port} is ${p.protocol}; Brightbox load balancers carry TCP only`,
      );
    }
    if (!(p.nodePort >= 1 && p.nodePort <= 65535)) {
      throw new InvalidConfigError(`${svc} port ${p.name || p.port} has no node port yet`);
    }
  }
  if (req.service.sessionAffinity !== 'None') {
    throw new InvalidConfigError(
      `${svc}: sessionAffinity ${req.service.sessionAffinity} is not supported; set ${ANNOTATIONS.policy.key}=source-address instead`,
    );
  }
  if (req.service.loadBalancerSourceRanges.length > 0) {
    throw new InvalidConfigError(
      `${svc}: loadBalancerSourceRanges is not supported, a Brightbox load balancer cannot filter clients; remove it`,
    );
  }
  const ip = req.service.loadBalancerIP;
  if (ip && settings.cloudIP) {
    throw new InvalidConfigError(
      `${svc}: remove spec.loadBalancerIP, annotation ${ANNOTATIONS.cloudIPAllocations.key} already names the cloud IP`,
    );
  }
  if (ip && isIP(ip) === 0)
    throw new InvalidConfigError(`${svc}: spec.loadBalancerIP "${ip}" is not an IP address`);

  const sslPorts = new Set(settings.sslPorts);
  const isSSL = (p: LoadBalancerRequest['ports'][number]) =>
    p.port === SSL_PORT || sslPorts.has(String(p.port)) || (p.name !== '' && sslPorts.has(p.name));
  const listeners = req.ports.map(
    (p): WantListener => ({
      protocol: settings.listenerProtocol !== 'tcp' && isSSL(p) ? 'https' : settings.listenerProtocol,
      in: p.port,
      out: p.nodePort,
      timeout: settings.idleTimeout ?? DEFAULTS.listenerTimeout,
      ...(settings.proxyProtocol ? { proxy_protocol: settings.proxyProtocol } : {}),
    }),
  );

  // The reference's health check: http /healthz on the health check node port with
  // externalTrafficPolicy Local, else the listener's protocol on the first node port.
  const local = req.service.externalTrafficPolicy === 'Local' && req.service.healthCheckNodePort;
  const hcSettings = settings.healthcheck;
  const type = hcSettings.protocol ?? (local || settings.listenerProtocol !== 'tcp' ? 'http' : 'tcp');
  const healthcheck: Required<ApiHealthcheck> = {
    type,
    port: local ? (req.service.healthCheckNodePort as number) : (req.ports[0]?.nodePort as number),
    request: type === 'tcp' ? '/' : (hcSettings.request ?? '/healthz'),
    interval: hcSettings.interval ?? DEFAULTS.interval,
    timeout: hcSettings.timeout ?? DEFAULTS.timeout,
    threshold_up: hcSettings.thresholdUp ?? DEFAULTS.thresholdUp,
    threshold_down: hcSettings.thresholdDown ?? DEFAULTS.thresholdDown,
  };

  const ports = [...new Set([...req.ports.map((p) => p.nodePort), ...(local ? [local] : [])])];
  return {
    settings,
    serverIDs: backendServers(req).filter((id) => !gone?.has(id)),
    listeners,
    healthcheck,
    policy: settings.policy ?? DEFAULTS.policy,
    https: listeners.some((l) => l.protocol === 'https'),
    firewallPorts: ports.join(','),
  };
}

/**
 * Server ids of the backend Nodes: from the provider ID, or for a Node without one from its name
 * when that is a server id (the official controller's mapping). Other Nodes cannot be balanced to.
 */
function backendServers(req: LoadBalancerRequest): string[] {
  const ids = new Set<string>();
  for (const node of req.nodes) {
    const parsed = parseProviderID(node.providerID);
    if (parsed) {
      if (parsed.scheme === SCHEME && SERVER_ID.test(parsed.id)) ids.add(parsed.id);
    } else if (SERVER_ID.test(node.name)) {
      ids.add(node.name);
    }
  }
  return [...ids].sort();
}

function statusOf(lb: ApiLoadBalancer): LoadBalancerStatus {
  const ingress: LoadBalancerIngress[] = [];
  for (const cip of lb.cloud_ips ?? []) {
    // The balancer terminates connections: Proxy keeps kube-proxy from short-cutting the address.
    for (const ip of [cip.public_ipv4 ?? cip.public_ip, cip.public_ipv6]) {
      if (ip) ingress.push({ ip, ipMode: 'Proxy' });
    }
    if (cip.fqdn) ingress.push({ hostname: cip.fqdn });
  }
  return { ingress };
}

function sameBalancer(lb: ApiLoadBalancer, want: ReturnType<typeof balancerOptions>): boolean {
  const nodes = (lb.nodes ?? []).map((n) => n.id).sort();
  const listeners = [...(lb.listeners ?? [])].sort((a, b) => a.in - b.in);
  const wanted = [...want.listeners].sort((a, b) => a.in - b.in);
  const hc = lb.healthcheck;
  const domains = (lb.acme?.domains ?? []).map((d) => d.identifier).sort();
  return (
    // No nodes wanted: the options leave `nodes` out (see balancerOptions), so a PUT could not change
    // them; comparing would PUT on every sync for nothing.
    (want.nodes === undefined || nodes.join() === want.nodes.map((n) => n.node).join()) &&
    listeners.length === wanted.length &&
    listeners.every((l, i) => {
      const w = wanted[i];
      return (
        w !== undefined &&
        l.protocol === w.protocol &&
        l.in === w.in &&
        l.out === w.out &&
        l.timeout === w.timeout &&
        (l.proxy_protocol ?? null) === (w.proxy_protocol ?? null)
      );
    }) &&
    hc != null &&
    hc.type === want.healthcheck.type &&
    hc.port === want.healthcheck.port &&
    (hc.request ?? '/') === want.healthcheck.request &&
    hc.interval === want.healthcheck.interval &&
    hc.timeout === want.healthcheck.timeout &&
    hc.threshold_up === want.healthcheck.threshold_up &&
    hc.threshold_down === want.healthcheck.threshold_down &&
    (lb.policy ?? DEFAULTS.policy) === want.policy &&
    (lb.https_redirect ?? false) === want.https_redirect &&
    (!want.domains || domains.join() === [...want.domains].sort().join())
  );
}

function balancerOptions(name: string, plan: Plan, cip: CloudIPRef) {
  const domains = plan.https
    ? [...new Set([...plan.settings.sslDomains, cip.fqdn, cip.reverse_dns])]
        .filter((d): d is string => typeof d === 'string' && d !== '')
        .sort()
    : undefined;
  return {
    name,
    // gobrightbox v2.2.2 load_balancers.go l.91, LoadBalancerOptions.Nodes `json:"nodes,omitempty"`:
    // the SDK never sends an empty list, and the official controller's buildLoadBalancerNodes
    // (load_balancer.go l.76-79) gives nil for no Nodes. So `nodes` is left out when there is none:
    // the balancer keeps its last nodes, while the server group, and with it the firewall opening,
    // is emptied.
    ...(plan.serverIDs.length > 0 ? { nodes: plan.serverIDs.map((node) => ({ node })) } : {}),
    policy: plan.policy,
    listeners: plan.listeners,
    healthcheck: plan.healthcheck,
    https_redirect: plan.https,
    ...(domains ? { domains } : {}),
  };
}

/**
 * Ready only once Let's Encrypt has validated every domain, as the official controller (k8ssdk
 * ErrorIfAcmeNotComplete): until then an https listener has no certificate to serve.
 */
function checkCertificate(lb: ApiLoadBalancer, cip: ApiCloudIP): void {
  for (const domain of lb.acme?.domains ?? []) {
    if (domain.status === 'valid') continue;
    const said = domain.last_message ? `: ${domain.last_message}` : '';
    if (domain.status === 'invalid') {
      throw new RetryableError(
        `Let's Encrypt refused ${domain.identifier} for load balancer ${lb.id}${said}; point the name at cloud IP ${cip.public_ipv4 ?? cip.public_ip ?? cip.id}, or remove it from ${ANNOTATIONS.sslDomains.key}`,
        FAILED_RETRY_MS,
      );
    }
    throw new RetryableError(
      `Let's Encrypt has not validated ${domain.identifier} for load balancer ${lb.id} yet (${domain.status ?? 'no status'}${said})`,
      BUILDING_RETRY_MS,
    );
  }
}

function where(cip: ApiCloudIP): string {
  const target = cip.load_balancer ?? cip.server ?? cip.server_group ?? cip.database_server ?? cip.interface;
  return target ? `${target.id}${target.name ? ` (${target.name})` : ''}` : 'another resource';
}

/**
 * A cloud IP of this Service that delete releases: one mapped elsewhere than its balancers (live, or
 * of its name and failed or deleted) is in use and stays.
 */
function deletableCloudIP(cip: ApiCloudIP, name: string, balancers: ReadonlySet<string>): boolean {
  if (cip.name !== name) return false;
  const on = cip.load_balancer;
  return cip.status !== 'mapped' || Boolean(on && (balancers.has(on.id) || deadBalancerOf(on, name)));
}

/** A balancer named for this Service that Brightbox reports failed or deleted (see `balancers`). */
function deadBalancerOf(lb: { name?: string | null; status?: string }, name: string): boolean {
  return lb.name === name && (lb.status === 'failed' || lb.status === 'deleted');
}

/** The Service's own server group (never an account's default group). */
function deletableGroup(group: ApiServerGroup, name: string): boolean {
  return group.name === name && !group.default;
}

/**
 * What a sync acts on. ccm's own resources: everything named `name` (ccm's naming is its ownership
 * marker). A balancer handed over by `ccm migrate` (`adoptedID`): the official name is shared by every
 * cluster run with the same --cluster-name (brightbox/load_balancer_cloud.go GetLoadBalancerName), so
 * only that balancer by its id, the cloud IPs mapped to it, the server group of that name holding only
 * its backends or this cluster's, and the firewall policy of that name applied to that group are
 * taken; anything ccm has to make for it is named `own`, ccm's own name.
 */
interface Scope {
  name: string;
  adoptedID?: string;
  own: string;
}

/** A server group of the official name that belongs to the handed-over balancer: its servers all ours. */
function adoptedGroup(group: ApiServerGroup, scope: Scope, servers: ReadonlySet<string>): boolean {
  const members = (group.servers ?? []).map((s) => s.id);
  return (
    group.name === scope.name &&
    !group.default &&
    members.length > 0 &&
    members.every((id) => servers.has(id))
  );
}

class BrightboxLoadBalancers implements LoadBalancers {
  readonly adoption: LoadBalancerAdoption;

  constructor(
    private readonly client: BrightboxClient,
    private readonly gone?: GoneServers,
  ) {
    this.adoption = brightboxAdoption(client);
  }

  /**
   * The name of everything of this Service: ccm's own, or for a load balancer handed over by
   * `ccm migrate` the official controller's (its cloud IP, server group and firewall policy carry the
   * same name), so the walk below finds and updates all four in place. A hand-over whose balancer is
   * gone falls back to ccm's own name.
   */
  private async scopeOf(req: LoadBalancerRequest, signal?: AbortSignal): Promise<Scope> {
    const own = ownedName(req);
    if (!req.adoptedID) return { name: own, own };
    try {
      const lb = await this.client.get<ApiLoadBalancer>(`load_balancers/${req.adoptedID}`, signal);
      if (lb.name && lb.status !== 'deleted' && lb.status !== 'failed') {
        return { name: lb.name, adoptedID: lb.id, own };
      }
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return { name: own, own };
  }

  /**
   * The Service's balancer; while Brightbox is still deleting it, or a delete left its cloud IP, group
   * or policy behind, one with no address: the service controller deletes only what `get` reports,
   * and removes the finalizer once it reports nothing.
   */
  async get(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus | undefined> {
    const scope = await this.scopeOf(req, signal);
    const lb = (await this.balancers(scope, signal, true))[0];
    if (lb) return lb.status === 'deleting' ? { ingress: [] } : statusOf(lb);
    return (await this.leftOver(scope.own, signal)) ? { ingress: [] } : undefined;
  }

  async ensure(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus> {
    const plan = planBalancer(req, this.gone);
    const scope = await this.scopeOf(req, signal);
    const adopted = scope.adoptedID ? (await this.balancers(scope, signal))[0] : undefined;
    if (scope.adoptedID && !adopted) {
      throw new RetryableError(
        `handed-over load balancer ${scope.adoptedID} is being deleted in Brightbox`,
        BUILDING_RETRY_MS,
      );
    }
    const description = describe(req);
    const cloudIPs = await this.client.get<ApiCloudIP[]>('cloud_ips', signal);
    const cip = await this.ensureCloudIP(req, plan, scope, cloudIPs, signal);
    const servers = new Set([...plan.serverIDs, ...(adopted?.nodes ?? []).map((n) => n.id)]);
    const group = await this.ensureServerGroup(scope, servers, description, plan.serverIDs, signal);
    const policy = await this.ensureFirewallPolicy(scope, description, group, signal);
    await this.ensureFirewallRule(policy, description, plan.firewallPorts, signal);
    const lb = await this.ensureBalancer(scope, plan, cip, signal);
    await this.ensureMapped(cip, lb, signal);
    for (const other of lb.cloud_ips ?? []) {
      if (other.id !== cip.id) await this.client.post(`cloud_ips/${other.id}/unmap`, undefined, signal);
    }
    // A cloud IP ccm allocated earlier, replaced since by one named in the Service: released.
    for (const old of cloudIPs) {
      const wasOnOurs = (lb.cloud_ips ?? []).some((c) => c.id === old.id);
      // Of a handed-over balancer's official name, only one that was on it is ours.
      const named = old.name === scope.own || (old.name === scope.name && (!scope.adoptedID || wasOnOurs));
      if (named && old.id !== cip.id && (old.status !== 'mapped' || wasOnOurs)) {
        await this.client.delete(`cloud_ips/${old.id}`, signal);
      }
    }
    const current = await this.client.get<ApiLoadBalancer>(`load_balancers/${lb.id}`, signal);
    if (!(current.cloud_ips ?? []).some((c) => c.id === cip.id)) {
      throw new RetryableError(
        `cloud IP ${cip.id} is not mapped to load balancer ${lb.id} yet`,
        BUILDING_RETRY_MS,
      );
    }
    checkCertificate(current, cip);
    return statusOf(current);
  }

  /** As the official controller: the same idempotent walk, which changes only what differs. */
  async updateNodes(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void> {
    await this.ensure(req, signal);
  }

  async delete(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void> {
    const scope = await this.scopeOf(req, signal);
    if (scope.adoptedID) await this.releaseAdopted(req, scope, signal);
    const name = scope.own;
    const balancers = await this.balancers(scope, signal, true);
    const ours = new Set(balancers.map((lb) => lb.id));
    for (const lb of balancers) {
      for (const cip of lb.cloud_ips ?? [])
        await this.client.post(`cloud_ips/${cip.id}/unmap`, undefined, signal);
      if (lb.status !== 'deleting') await this.client.delete(`load_balancers/${lb.id}`, signal);
    }
    // Done once Brightbox has removed the balancer ("ensure deleted, then remove the finalizer"):
    // one still deleting is a RetryableError, so the Service keeps its finalizer until then. One
    // that ends `failed` counts as erased, as for the official controller (k8ssdk ErrorIfNotErased).
    // Its cloud IP, group and policy go once it has.
    if (balancers.length > 0) {
      const left = await this.balancers(scope, signal, true);
      if (left.length > 0) {
        throw new RetryableError(
          `Brightbox is still deleting load balancer ${left.map((lb) => lb.id).join(', ')}`,
          BUILDING_RETRY_MS,
        );
      }
    }
    for (const cip of await this.client.get<ApiCloudIP[]>('cloud_ips', signal)) {
      if (!deletableCloudIP(cip, name, ours)) continue;
      if (cip.status === 'mapped') await this.client.post(`cloud_ips/${cip.id}/unmap`, undefined, signal);
      await this.client.delete(`cloud_ips/${cip.id}`, signal);
    }
    for (const policy of await this.client.get<ApiFirewallPolicy[]>('firewall_policies', signal)) {
      if (policy.name === name) await this.client.delete(`firewall_policies/${policy.id}`, signal);
    }
    for (const group of await this.client.get<ApiServerGroup[]>('server_groups', signal)) {
      if (!deletableGroup(group, name)) continue;
      const members = (group.servers ?? []).map((s) => ({ server: s.id }));
      if (members.length > 0) {
        await this.client.post(`server_groups/${group.id}/remove_servers`, { servers: members }, signal);
      }
      await this.client.delete(`server_groups/${group.id}`, signal);
    }
  }

  /**
   * Of a handed-over balancer, what belongs to it goes first, while the balancer still shows it: the
   * cloud IPs mapped to it, the firewall policy of its name on its server group, that group (see
   * adoptedGroup). Then the balancer by its id alone: upstream deletes one balancer of the name
   * (brightbox/load_balancer.go ensureLoadBalancerDeletedByName), never all of them.
   */
  private async releaseAdopted(req: LoadBalancerRequest, scope: Scope, signal?: AbortSignal) {
    const lb = (await this.balancers(scope, signal))[0];
    if (!lb) return;
    for (const cip of lb.cloud_ips ?? []) {
      await this.client.post(`cloud_ips/${cip.id}/unmap`, undefined, signal);
      if (cip.name === scope.name || cip.name === scope.own) {
        await this.client.delete(`cloud_ips/${cip.id}`, signal);
      }
    }
    const servers = new Set([...backendServers(req), ...(lb.nodes ?? []).map((n) => n.id)]);
    const groups = (await this.client.get<ApiServerGroup[]>('server_groups', signal)).filter((g) =>
      adoptedGroup(g, scope, servers),
    );
    for (const policy of await this.client.get<ApiFirewallPolicy[]>('firewall_policies', signal)) {
      if (policy.name === scope.name && groups.some((g) => g.id === policy.server_group?.id)) {
        await this.client.delete(`firewall_policies/${policy.id}`, signal);
      }
    }
    for (const group of groups) {
      const members = (group.servers ?? []).map((s) => ({ server: s.id }));
      await this.client.post(`server_groups/${group.id}/remove_servers`, { servers: members }, signal);
      await this.client.delete(`server_groups/${group.id}`, signal);
    }
  }

  /** Whether delete would still remove something of this Service, with no balancer left. */
  private async leftOver(name: string, signal?: AbortSignal): Promise<boolean> {
    const cloudIPs = await this.client.get<ApiCloudIP[]>('cloud_ips', signal);
    if (cloudIPs.some((cip) => deletableCloudIP(cip, name, new Set()))) return true;
    const policies = await this.client.get<ApiFirewallPolicy[]>('firewall_policies', signal);
    if (policies.some((policy) => policy.name === name)) return true;
    const groups = await this.client.get<ApiServerGroup[]>('server_groups', signal);
    return groups.some((group) => deletableGroup(group, name));
  }

  /**
   * Balancers named for this Service; deleted and failed ones (and, unless asked, those being
   * deleted) left out. The listing keeps deleted and failed balancers, which the official controller
   * passes over: k8ssdk v2.1.1 brightbox_interface.go l.69-70 and l.93 (GetLoadBalancerByName keeps
   * only active or creating ones) and l.575 (ErrorIfNotErased: one not alive is erased).
   */
  private async balancers(
    scope: Scope,
    signal?: AbortSignal,
    withDeleting = false,
  ): Promise<ApiLoadBalancer[]> {
    const all = await this.client.get<ApiLoadBalancer[]>('load_balancers', signal);
    return all.filter(
      (lb) =>
        lb.name === scope.name &&
        (!scope.adoptedID || lb.id === scope.adoptedID) &&
        lb.status !== 'deleted' &&
        lb.status !== 'failed' &&
        (withDeleting || lb.status !== 'deleting'),
    );
  }

  private async ensureCloudIP(
    req: LoadBalancerRequest,
    plan: Plan,
    scope: Scope,
    cloudIPs: ApiCloudIP[],
    signal?: AbortSignal,
  ): Promise<ApiCloudIP> {
    const named = plan.settings.cloudIP;
    if (named) {
      const found = cloudIPs.find((c) => c.id === named);
      if (!found) {
        throw new InvalidConfigError(
          `annotation ${ANNOTATIONS.cloudIPAllocations.key} names cloud IP ${named}, which this Brightbox account does not have`,
        );
      }
      return found;
    }
    const ip = req.service.loadBalancerIP;
    if (ip) {
      const found = cloudIPs.find((c) =>
        [c.public_ip, c.public_ipv4, c.public_ipv6].some((a) => a && sameIP(a, ip)),
      );
      if (!found) {
        throw new InvalidConfigError(
          `spec.loadBalancerIP ${ip} is not a cloud IP of this Brightbox account; allocate it first, or remove the field`,
        );
      }
      return found;
    }
    // Two of ccm's with this name (a create that landed late, after a Lease handover): the one mapped
    // is the Service's address in use, whatever the listing's order; the other one is released below.
    // A handed-over balancer's: the one mapped to it (another cluster's of the same name is not).
    const onAdopted = scope.adoptedID
      ? cloudIPs.find((c) => c.name === scope.name && c.load_balancer?.id === scope.adoptedID)
      : undefined;
    if (onAdopted) return onAdopted;
    const namesakes = cloudIPs.filter((c) => c.name === scope.own);
    const ours = namesakes.find((c) => c.status === 'mapped') ?? namesakes[0];
    return ours ?? this.client.post<ApiCloudIP>('cloud_ips', { name: scope.own }, signal);
  }

  private async ensureServerGroup(
    scope: Scope,
    servers: ReadonlySet<string>,
    description: string,
    serverIDs: string[],
    signal?: AbortSignal,
  ): Promise<ApiServerGroup> {
    const groups = await this.client.get<ApiServerGroup[]>('server_groups', signal);
    const name = scope.own;
    const group =
      (scope.adoptedID ? groups.find((g) => adoptedGroup(g, scope, servers)) : undefined) ??
      groups.find((g) => g.name === name && !g.default) ??
      (await this.client.post<ApiServerGroup>('server_groups', { name, description }, signal));
    const members = new Set((group.servers ?? []).map((s) => s.id));
    const add = serverIDs.filter((id) => !members.has(id)).map((server) => ({ server }));
    const remove = [...members].filter((id) => !serverIDs.includes(id)).map((server) => ({ server }));
    if (add.length > 0)
      await this.client.post(`server_groups/${group.id}/add_servers`, { servers: add }, signal);
    if (remove.length > 0) {
      await this.client.post(`server_groups/${group.id}/remove_servers`, { servers: remove }, signal);
    }
    return group;
  }

  private async ensureFirewallPolicy(
    scope: Scope,
    description: string,
    group: ApiServerGroup,
    signal?: AbortSignal,
  ): Promise<ApiFirewallPolicy> {
    const policies = await this.client.get<ApiFirewallPolicy[]>('firewall_policies', signal);
    const name = scope.own;
    const onAdopted = scope.adoptedID
      ? policies.find((p) => p.name === scope.name && p.server_group?.id === group.id)
      : undefined;
    if (onAdopted) return onAdopted;
    const policy = policies.find((p) => p.name === name);
    if (!policy) {
      return this.client.post<ApiFirewallPolicy>(
        'firewall_policies',
        { name, description, server_group: group.id },
        signal,
      );
    }
    if (policy.server_group?.id === group.id) return policy;
    // Re-pointed by the documented actions, as terraform-provider-brightbox does: off its old group
    // (one that was deleted leaves the policy on none), then onto ours.
    if (policy.server_group) {
      await this.client.post(
        `firewall_policies/${policy.id}/remove`,
        { server_group: policy.server_group.id },
        signal,
      );
    }
    return this.client.post<ApiFirewallPolicy>(
      `firewall_policies/${policy.id}/apply_to`,
      { server_group: group.id },
      signal,
    );
  }

  private async ensureFirewallRule(
    policy: ApiFirewallPolicy,
    description: string,
    ports: string,
    signal?: AbortSignal,
  ): Promise<void> {
    const want = { protocol: RULE_PROTOCOL, source: RULE_SOURCE, destination_port: ports, description };
    // A rule given a destination by hand is replaced, not updated. gobrightbox could clear it: its
    // FirewallRuleOptions fields are *string with omitempty (firewall_rules.go l.28-34), so a pointer
    // to "" is sent, as terraform-provider-brightbox does to clear a field (util.go assignString).
    // But what the API makes of an empty destination is shown nowhere upstream; a new rule is sure.
    const rules = policy.rules ?? [];
    const rule = rules.find((r) => (r.destination ?? '') === '');
    const extra = rules.filter((r) => r !== rule);
    if (!rule) {
      await this.client.post('firewall_rules', { firewall_policy: policy.id, ...want }, signal);
    } else if (
      rule.protocol !== want.protocol ||
      rule.source !== want.source ||
      rule.destination_port !== want.destination_port ||
      rule.description !== want.description
    ) {
      await this.client.put(`firewall_rules/${rule.id}`, want, signal);
    }
    // The policy is ours: one rule is all it should hold.
    for (const other of extra) await this.client.delete(`firewall_rules/${other.id}`, signal);
  }

  private async ensureBalancer(
    scope: Scope,
    plan: Plan,
    cip: ApiCloudIP,
    signal?: AbortSignal,
  ): Promise<ApiLoadBalancer> {
    const want = balancerOptions(scope.name, plan, cip);
    let lb = (await this.balancers(scope, signal))[0];
    if (!lb) {
      lb = await this.client.post<ApiLoadBalancer>('load_balancers', want, signal);
    } else if (lb.status === 'active' && !sameBalancer(lb, want)) {
      lb = await this.client.put<ApiLoadBalancer>(`load_balancers/${lb.id}`, want, signal);
    }
    if (lb.status === 'creating') {
      throw new RetryableError(`Brightbox is still building load balancer ${lb.id}`, BUILDING_RETRY_MS);
    }
    if (lb.status !== 'active') {
      throw new RetryableError(
        `load balancer ${lb.id} is ${lb.status} in Brightbox; delete it there and ccm builds a new one`,
        FAILED_RETRY_MS,
      );
    }
    return lb;
  }

  private async ensureMapped(cip: ApiCloudIP, lb: ApiLoadBalancer, signal?: AbortSignal): Promise<void> {
    if ((lb.cloud_ips ?? []).some((c) => c.id === cip.id) || cip.load_balancer?.id === lb.id) return;
    // Still on a balancer of this Service that Brightbox reports failed (passed over, see balancers):
    // ours on both ends, so it is moved to the new balancer.
    if (cip.status === 'mapped' && cip.load_balancer && deadBalancerOf(cip.load_balancer, lb.name ?? '')) {
      await this.client.post(`cloud_ips/${cip.id}/unmap`, undefined, signal);
    } else if (cip.status === 'mapped') {
      throw new InvalidConfigError(
        `cloud IP ${cip.id} is mapped to ${where(cip)}; ccm does not take it over: unmap it, or name another one in ${ANNOTATIONS.cloudIPAllocations.key}`,
      );
    }
    await this.client.post(`cloud_ips/${cip.id}/map`, { destination: lb.id }, signal);
  }
}

function sameIP(a: string, b: string): boolean {
  const norm = (ip: string) => (isIP(ip) === 6 ? new URL(`http://[${ip}]/`).hostname : ip);
  try {
    return norm(a) === norm(b);
  } catch {
    return false;
  }
}
