import { InvalidConfigError } from '../errors.js';
import { parseProviderID } from '../provider-id.js';
import type { LoadBalancerRequest, LoadBalancerStatus, LoadBalancers } from '../types.js';
import { CNS_SERVICE_NAME, CNS_SRV_PORT } from './annotations.js';
import type { Account, Machine, Tags, TritonClient } from './client.js';
import { formatOwnership, ownerTag, parseOwnership, planTags, SERVICES_TAG, settled } from './cns.js';
import type { DatacenterResolver } from './instances.js';
import { SCHEME } from './instances.js';
import { type MachineTagOptions, MachineTagWriter } from './machine-tags.js';

/**
 * Service load balancing through Triton CNS: no load balancer object exists, CNS publishes the
 * machines whose `triton.cns.services` tag names a service as `<name>.svc.<account>.<dc>.<suffix>`.
 * ccm puts `<name>:<port>` entries on exactly the backend machines and takes only its own off.
 * Races with other writers: machine-tags.ts.
 */
export interface CnsOptions extends MachineTagOptions {
  datacenter: DatacenterResolver;
  cnsSuffix: string;
}

interface Plan {
  label: string;
  entries: string[];
  owner: { cluster: string; service: string };
  key: string;
}

export class CnsLoadBalancers implements LoadBalancers {
  private account?: Promise<Account>;
  private readonly tags: MachineTagWriter;

  constructor(
    private readonly client: TritonClient,
    private readonly options: CnsOptions,
    tags?: MachineTagWriter,
  ) {
    this.tags = tags ?? new MachineTagWriter(client, options);
  }

  async get(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus | undefined> {
    const plan = this.plan(req);
    const machines = await this.taggable(signal);
    if (!machines.some((m) => this.owns(m.tags ?? {}, plan))) return undefined;
    return this.status(plan, signal);
  }

  async ensure(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus> {
    const plan = this.plan(req);
    const status = await this.status(plan, signal);
    await this.reconcile(req, plan, signal);
    return status;
  }

  async updateNodes(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void> {
    await this.reconcile(req, this.plan(req), signal);
  }

  async delete(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void> {
    const plan = this.plan(req, false);
    const machines = await this.taggable(signal);
    const owned = machines.filter((m) => this.owns(m.tags ?? {}, plan));
    await inBatches(owned, (m) => this.change(m.id, plan, undefined, signal));
  }

  /** Puts the entries on the backends, takes them off every other machine ccm put them on. */
  private async reconcile(req: LoadBalancerRequest, plan: Plan, signal?: AbortSignal): Promise<void> {
    const machines = await this.taggable(signal);
    const backends = backendMachines(req, machines);
    const leaving = machines.filter((m) => !backends.has(m.id) && this.owns(m.tags ?? {}, plan));
    const changes: [string, string[] | undefined][] = [
      ...[...backends].map((id): [string, string[]] => [id, plan.entries]),
      ...leaving.map((m): [string, undefined] => [m.id, undefined]),
    ];
    await inBatches(changes, ([id, desired]) => this.change(id, plan, desired, signal));
  }

  /**
   * Every machine that may carry ccm's tags: a plain ListMachines leaves out `failed` machines, so
   * ccm would never take its entries off one, and they would be back in DNS if it recovered. The
   * listing with `tombstone` has them (and destroyed machines whose history is kept, which are
   * left out here: there is nothing to publish or clean on them).
   */
  private async taggable(signal?: AbortSignal): Promise<Machine[]> {
    const machines = await this.client.listMachines(signal, { tombstone: true });
    return machines.filter((m) => m.state !== 'deleted');
  }

  private plan(req: LoadBalancerRequest, strict = true): Plan {
    const annotations = req.service.annotations;
    const label = CNS_SERVICE_NAME.parse(annotations, req.name);
    const srvPort = CNS_SRV_PORT.parse(annotations, 'node-port');
    if (strict && req.service.loadBalancerIP) {
      throw new InvalidConfigError(
        `spec.loadBalancerIP ${req.service.loadBalancerIP} cannot be honoured: Triton CNS publishes the backend machines' own addresses under a host name`,
      );
    }
    const ports = req.ports.map((p) => (srvPort === 'node-port' ? p.nodePort : p.port));
    if (strict && ports.some((p) => !(p > 0))) {
      throw new InvalidConfigError(
        `Service ${req.service.namespace}/${req.service.name} has a port without a node port; CNS entries need one (set allocateLoadBalancerNodePorts, or annotation ${CNS_SRV_PORT.key}=service-port)`,
      );
    }
    const entries = [...new Set(ports.filter((p) => p > 0).map((p) => `${label}:${p}`))];
    return {
      label,
      entries: entries.length > 0 ? entries : [label],
      owner: { cluster: req.clusterID, service: `${req.service.namespace}/${req.service.name}` },
      key: ownerTag(req.service.uid),
    };
  }

  /** ccm's owner tag for this Service and this cluster; one of another cluster is never adopted. */
  private owns(tags: Tags, plan: Plan): boolean {
    return parseOwnership(tags[plan.key])?.cluster === plan.owner.cluster;
  }

  private async status(plan: Plan, signal?: AbortSignal): Promise<LoadBalancerStatus> {
    const [account, dc] = await Promise.all([this.getAccount(signal), this.options.datacenter(signal)]);
    if (account.triton_cns_enabled === false) {
      throw new InvalidConfigError(
        `Triton CNS is not enabled for account ${account.login}; enable it (triton account update triton_cns_enabled=true), CNS load balancing needs it`,
      );
    }
    return { ingress: [{ hostname: `${plan.label}.svc.${account.id}.${dc}.${this.options.cnsSuffix}` }] };
  }

  private getAccount(signal?: AbortSignal): Promise<Account> {
    this.account ??= this.client.getAccount(signal).catch((err: unknown) => {
      this.account = undefined;
      throw err;
    });
    return this.account;
  }

  /** One machine's change, through the provider's one tag writer (queued per machine). */
  private change(id: string, plan: Plan, desired: string[] | undefined, signal?: AbortSignal) {
    return this.tags.change(
      id,
      'CNS tags',
      (tags) => {
        const own = parseOwnership(tags[plan.key]);
        if (own && own.cluster !== plan.owner.cluster) {
          throw new InvalidConfigError(
            `machine ${id} carries tag ${plan.key} of cluster "${own.cluster}", not this cluster ("${plan.owner.cluster}"); ccm leaves it alone (remove the tag or fix --cluster-name)`,
          );
        }
        const change = planTags(tags, plan.key, plan.owner, desired);
        if (!change.changed) return undefined;
        const services: Tags =
          change.services.length > 0 ? { [SERVICES_TAG]: change.services.join(',') } : {};
        const isSettled = (after: Tags) => settled(after, plan.key, change);
        // One write when ccm takes ownership; otherwise entries first, owner tag last: a failure in
        // between leaves a claim ccm can still clean up.
        if (change.ownership) {
          return { add: { ...services, [plan.key]: formatOwnership(change.ownership) }, settled: isSettled };
        }
        const dropServices = change.services.length === 0 && tags[SERVICES_TAG] !== undefined;
        return {
          add: services,
          remove: [...(dropServices ? [SERVICES_TAG] : []), plan.key],
          settled: isSettled,
        };
      },
      signal,
    );
  }
}

/** CloudAPI throttles: at most this many machines' tags are changed at once. */
const PARALLEL_MACHINES = 8;

/** Runs `fn` over every item, a few at a time; every item is tried, the first failure is thrown. */
async function inBatches<T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item).catch((err: unknown) => failures.push(err));
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_MACHINES, items.length) }, worker));
  if (failures.length > 0) throw failures[0];
}

/**
 * Backend Nodes as machine ids: by provider ID, else by name (a Node without one yet). A failed
 * machine is never a backend: CloudAPI does not even list it without `tombstone`.
 */
function backendMachines(req: LoadBalancerRequest, machines: Machine[]): Set<string> {
  const byId = new Map(
    machines.filter((m) => m.state !== 'deleted' && m.state !== 'failed').map((m) => [m.id, m]),
  );
  const byName = new Map<string, Machine>();
  for (const m of byId.values()) byName.set(m.name, m);
  const ids = new Set<string>();
  for (const node of req.nodes) {
    const parsed = parseProviderID(node.providerID);
    const machine = parsed
      ? parsed.scheme === SCHEME
        ? byId.get(parsed.id)
        : undefined
      : byName.get(node.name);
    if (machine) ids.add(machine.id);
  }
  return ids;
}
