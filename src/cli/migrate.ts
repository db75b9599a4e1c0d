import { isIP } from 'node:net';
import { describeRequest, wantsLoadBalancer } from '../controllers/service.js';
import { adoptable, claimsOf } from '../controllers/service-sync.js';
import { clusterIdentity } from '../kube/cluster-identity.js';
import { loadKubeConfig } from '../kube/config.js';
import { listWorkloads, type PodInfo, readLease, type WorkloadInfo } from '../kube/diagnostics.js';
import { KubeApiError } from '../kube/errors.js';
import { type SlimService, serviceKey, slimService } from '../kube/services.js';
import { slimNode } from '../kube/slim-node.js';
import { itemsOf, KubeTransport } from '../kube/transport.js';
import {
  ANNOTATION_ADOPTED_LOAD_BALANCER,
  FIELD_MANAGER,
  FINALIZER_LOAD_BALANCER_CLEANUP,
  MIGRATION_BACKUP_CONFIGMAP,
} from '../kube/well-known.js';
import { loadProvider } from '../providers/registry.js';
import type {
  ForeignLoadBalancer,
  LoadBalancerAdoption,
  LoadBalancerNode,
  OfficialController,
  ProviderDefinition,
} from '../providers/types.js';
import { UsageError } from './errors.js';
import { didYouMean } from './flag-values.js';
import { transportOptionsFrom } from './kube-flags.js';
import {
  type ClusterAndCloudFlags,
  createProvider,
  credentialSource,
  originOf,
  resolveProviderValues,
} from './provider-config.js';

/**
 * `ccm migrate`: takes over what the cloud's official controller left in a cluster. It reads the
 * cluster (the controller's workload, Lease, Secret, the Services it finalised) and the cloud (its
 * load balancers, by its own naming and tagging rules), and makes a plan. Only `apply` writes: a
 * backup first (ConfigMap kube-system/ccm-migrate-backup), then ccm's tags next to the official ones,
 * then the adoption annotation on each Service. `rollback` puts back the tags and annotations it kept.
 * Nothing here ever deletes or creates a load balancer, or changes an address.
 */

export type MigrateMode = 'dry-run' | 'apply' | 'rollback' | 'rollback-dry-run';

export interface MigrateInput extends ClusterAndCloudFlags {
  mode: MigrateMode;
  /** --from: the official controller's id (default: the cloud's first). */
  from?: string;
  /** --cluster-name: ccm's identity in its tags (default: from the kube-system UID, as `ccm run`). */
  'cluster-name'?: string;
  /** --official-cluster-name: the --cluster-name the official controller ran with. */
  'official-cluster-name'?: string;
  /**
   * `apply` after a person confirmed a plan: that plan's hand-overs (planKeys). Anything else found
   * when applying (the cluster or cloud changed meanwhile) writes nothing.
   */
  confirmed?: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
}

export type ServiceAction =
  /** The official controller's load balancer is handed to ccm. */
  | 'adopt'
  /** Already handed over (the annotation is there). */
  | 'adopted'
  /** Given back by --rollback. */
  | 'restore'
  /** Nothing of the official controller's found: ccm builds a load balancer when it runs. */
  | 'none'
  /**
   * Found, but not to be handed over (the Service shows another address; the load balancer is shared,
   * or not the official controller's own): left alone, a person looks.
   */
  | 'mismatch';

export interface ServicePlan {
  namespace: string;
  name: string;
  action: ServiceAction;
  /** The Service's ingress addresses now. */
  ingress: string[];
  /** Whether the official controller finalised it (service.kubernetes.io/load-balancer-cleanup). */
  finalised: boolean;
  /** The official controller's annotations found on it. */
  officialAnnotations: Record<string, string>;
  loadBalancer?: ForeignLoadBalancer;
  /** Tags added next to the official ones (apply), or the whole list given back (rollback). */
  tags: string[];
  note?: string;
}

export interface FoundWorkload {
  kind: 'Deployment' | 'DaemonSet';
  namespace: string;
  name: string;
  /** Desired replicas (a DaemonSet: scheduled Pods). */
  replicas: number;
  /** Its --cluster-name, which its load balancers' names and tags carry. */
  clusterName?: string;
  /** Its --leader-elect-resource-name, when it elects on a Lease of its own name. */
  lease?: string;
}

export interface MigrateResult {
  provider: string;
  mode: MigrateMode;
  /** The official controller migrated from. */
  from: string;
  clusterID: string;
  officialCluster: string;
  /** Where officialCluster comes from: the flag, the official workload's --cluster-name, or its default. */
  officialClusterFrom: string;
  workloads: FoundWorkload[];
  leases: { name: string; holder?: string }[];
  secrets: { name: string; exists: boolean; compatible: boolean }[];
  configMaps: { name: string; exists: boolean }[];
  services: ServicePlan[];
  /** What is left alone, one line each. */
  untouched: string[];
  /** Why nothing is re-tagged, where the cloud cannot tag a load balancer ccm adopts. */
  retagNote?: string;
  /** Whether anything was written (apply, rollback). */
  wrote: boolean;
}

/**
 * One record of the backup: what `apply` changes of a Service and its load balancer, as it was before.
 * Only the annotations apply writes (absent: the Service did not have it), never a copy of all of them,
 * so a record stays a few hundred bytes whatever the Service carries.
 */
export interface BackupRecord {
  namespace: string;
  name: string;
  uid: string;
  annotations: Record<string, string>;
  loadBalancer: ForeignLoadBalancer;
}

export async function runMigrate(input: MigrateInput): Promise<MigrateResult> {
  if (!input.provider) {
    throw new UsageError('no provider given; pass --provider (e.g. --provider digitalocean)');
  }
  const definition = await loadProvider(input.provider);
  const official = officialOf(definition, input.from);
  const auth = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  const http = new KubeTransport(auth, transportOptionsFrom(input));
  try {
    const source = await credentialSource(definition, input, input.env, http);
    // createProvider: a --credentials-secret without the key is said as that Secret's, not the default's.
    const provider = createProvider(
      definition,
      resolveProviderValues(definition, input, input.env, source.secret?.data),
      { origin: originOf(definition, input, input.env, source.secret) },
      source.secret,
    );
    const adoption = provider.loadBalancers?.adoption;
    if (!adoption) {
      throw new UsageError(`the ${definition.name} provider has no load balancers to take over`);
    }
    const clusterID = await clusterIdentity(http, input['cluster-name']);
    const workloads = await findWorkloads(http, official);
    // The cluster name its names and tags carry: --official-cluster-name, else the one its own
    // Deployment or DaemonSet passes it, else its default.
    const fromWorkload = workloads.find((w) => w.clusterName);
    const officialCluster =
      input['official-cluster-name'] ?? fromWorkload?.clusterName ?? official.defaultClusterName ?? '';
    const officialClusterFrom =
      input['official-cluster-name'] !== undefined
        ? '--official-cluster-name'
        : fromWorkload
          ? `${fromWorkload.kind} ${fromWorkload.namespace}/${fromWorkload.name}`
          : `${official.id}'s default`;
    const leaseNames = [
      ...new Set([...official.leases, ...workloads.flatMap((w) => (w.lease ? [w.lease] : []))]),
    ];
    const [leases, secrets, configMaps, services, backup] = await Promise.all([
      Promise.all(
        leaseNames.map(async (name) => {
          const lease = await readLease(http, 'kube-system', name);
          return lease
            ? { name, ...(lease.holderIdentity ? { holder: lease.holderIdentity } : {}) }
            : undefined;
        }),
      ),
      Promise.all(
        official.secrets.map(async (name) => ({
          name,
          exists: await exists(http, `/api/v1/namespaces/kube-system/secrets/${name}`),
          compatible: official.secretCompatible,
        })),
      ),
      Promise.all(
        official.configMaps.map(async (name) => ({
          name,
          exists: await exists(http, `/api/v1/namespaces/kube-system/configmaps/${name}`),
        })),
      ),
      listLoadBalancerServices(http),
      readBackup(http),
    ]);
    const base = {
      provider: definition.name,
      mode: input.mode,
      from: official.id,
      clusterID,
      officialCluster,
      officialClusterFrom,
      workloads,
      leases: leases.filter((l): l is { name: string; holder?: string } => l !== undefined),
      secrets,
      configMaps,
    };
    if (input.mode === 'rollback' || input.mode === 'rollback-dry-run') {
      const apply = input.mode === 'rollback';
      if (apply) await refuseWhileCcmRuns(http);
      return { ...base, ...(await rollback(http, adoption, services, backup, officialCluster, apply)) };
    }
    const handOvers = new Map([...(backup?.values() ?? [])].map((r) => [r.uid, r.loadBalancer.id]));
    const nodes = await listClusterNodes(http);
    const plans = await planMigration(
      services,
      official,
      adoption,
      clusterID,
      officialCluster,
      handOvers,
      nodes,
    );
    const untouched = untouchedLines(base.workloads, base.leases);
    const firstFound = plans.find((p) => p.loadBalancer)?.loadBalancer;
    const note = firstFound && adoption.ownershipTags(firstFound, clusterID).note;
    Object.assign(base, note ? { retagNote: note } : {});
    if (input.mode === 'dry-run') return { ...base, services: plans, untouched, wrote: false };
    refuseWhileOfficialRuns(workloads);
    if (input.confirmed) refuseIfChanged(input.confirmed, planKeys(plans));
    const wrote = await apply(http, adoption, plans, services, backup);
    return { ...base, services: plans, untouched, wrote };
  } finally {
    await http.close();
  }
}

function officialOf(definition: ProviderDefinition, from: string | undefined): OfficialController {
  const all = definition.officialControllers ?? [];
  if (all.length === 0) {
    throw new UsageError(
      `${definition.name} has no official controller with load balancers to migrate from: ${definition.noOfficialController ?? 'there is none'}`,
    );
  }
  if (!from) return all[0] as OfficialController;
  const found = all.find((c) => c.id === from);
  if (!found) {
    throw new UsageError(
      `--from: expected one of ${all.map((c) => c.id).join(', ')} (the official controllers of ${definition.name}), got ${JSON.stringify(from)}${didYouMean(
        from,
        all.map((c) => c.id),
      )}`,
    );
  }
  return found;
}

/** ccm's Pods, as `ccm manifests` labels them (doctor looks for the same). */
const CCM_POD_SELECTOR = 'app.kubernetes.io/name=ccm,app.kubernetes.io/component=controller';

/**
 * A rollback under a running ccm would take the hand-over from under its service controller, which
 * would then build load balancers of its own: refused while a ccm Pod runs.
 */
async function refuseWhileCcmRuns(http: KubeTransport): Promise<void> {
  const list = await http.request<{ items?: PodInfo[] }>({
    method: 'GET',
    path: `/api/v1/pods?labelSelector=${encodeURIComponent(CCM_POD_SELECTOR)}`,
  });
  const running = itemsOf(list, '/api/v1/pods').filter(
    (p) => p.status?.phase === 'Running' || p.status?.phase === 'Pending',
  );
  const first = running[0]?.metadata;
  if (first) {
    throw new UsageError(
      `ccm still runs (Pod ${first.namespace}/${first.name}${running.length > 1 ? ` and ${running.length - 1} more` : ''}): stop it first (kubectl -n ${first.namespace} delete daemonset,deployment -l ${CCM_POD_SELECTOR}), then --rollback, or its service controller would build load balancers of its own`,
    );
  }
}

/** The hand-overs of a plan, one `namespace/name=load balancer id` each, sorted. */
export function planKeys(plans: readonly ServicePlan[]): string[] {
  return plans
    .filter((p) => p.action === 'adopt' && p.loadBalancer)
    .map((p) => `${p.namespace}/${p.name}=${p.loadBalancer?.id}`)
    .sort();
}

function refuseIfChanged(confirmed: readonly string[], now: readonly string[]): void {
  const added = now.filter((k) => !confirmed.includes(k));
  const gone = confirmed.filter((k) => !now.includes(k));
  if (added.length === 0 && gone.length === 0) return;
  throw new UsageError(
    `the plan changed since it was shown (${[...added.map((k) => `now ${k}`), ...gone.map((k) => `no longer ${k}`)].join('; ')}): nothing was written; run ccm migrate again and confirm the new plan`,
  );
}

/**
 * A hand-over while the official controller still runs leaves two controllers on the same load
 * balancers, each undoing the other: refused, as --rollback is while ccm runs.
 */
function refuseWhileOfficialRuns(workloads: readonly FoundWorkload[]): void {
  const running = workloads.find((w) => w.replicas > 0);
  if (!running) return;
  const { kind, namespace, name, replicas } = running;
  const stop =
    kind === 'Deployment'
      ? `kubectl -n ${namespace} scale deployment/${name} --replicas=0`
      : `give daemonset/${name} a nodeSelector no Node has, see docs/migrate.md`;
  throw new UsageError(
    `the official controller still runs (${kind} ${namespace}/${name}, ${replicas} replica${replicas === 1 ? '' : 's'}): stop it first (${stop}), then --yes, or both controllers would change the same load balancers`,
  );
}

async function exists(http: KubeTransport, path: string): Promise<boolean> {
  try {
    // Only whether it is there: its values are never read here (the provider reads the Secret itself).
    await http.request({ method: 'GET', path, discardResponse: true });
    return true;
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return false;
    throw err;
  }
}

async function findWorkloads(http: KubeTransport, official: OfficialController): Promise<FoundWorkload[]> {
  return (await listWorkloads(http))
    .filter((w) => isOfficial(w, official))
    .map(({ kind, namespace, name, replicas, commandLines }) => {
      const clusterName = flagValue(commandLines, 'cluster-name');
      const lease = flagValue(commandLines, 'leader-elect-resource-name');
      return {
        kind,
        namespace,
        name,
        replicas,
        ...(clusterName ? { clusterName } : {}),
        ...(lease ? { lease } : {}),
      };
    });
}

/** A flag's value in a container's command line (`--name=value` or `--name value`), if given. */
export function flagValue(commandLines: readonly (readonly string[])[], name: string): string | undefined {
  for (const line of commandLines) {
    for (let i = 0; i < line.length; i++) {
      const arg = line[i] as string;
      if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
      if (arg === `--${name}` && i + 1 < line.length) return line[i + 1];
    }
  }
  return undefined;
}

/** The official controller's workload: by its published name, or by its image under another name. */
export function isOfficial(w: WorkloadInfo, official: OfficialController): boolean {
  return (
    official.workloads.includes(w.name) || w.images.some((i) => official.images.some((o) => i.includes(o)))
  );
}

async function listLoadBalancerServices(http: KubeTransport): Promise<SlimService[]> {
  const list = await http.request<{ items?: unknown[] }>({ method: 'GET', path: '/api/v1/services' });
  return itemsOf(list, '/api/v1/services')
    .map(slimService)
    .filter((s) => s.type === 'LoadBalancer' || s.finalizers.includes(FINALIZER_LOAD_BALANCER_CLEANUP));
}

/** Every Node of this cluster, as a load balancer backend would be matched against it. */
async function listClusterNodes(http: KubeTransport): Promise<LoadBalancerNode[]> {
  const list = await http.request<{ items?: unknown[] }>({ method: 'GET', path: '/api/v1/nodes' });
  return itemsOf(list, '/api/v1/nodes')
    .map(slimNode)
    .map((node) => ({
      name: node.metadata?.name ?? '',
      providerID: node.spec?.providerID ?? '',
      addresses: (node.status?.addresses ?? []) as LoadBalancerNode['addresses'],
    }));
}

const ingressOf = (svc: SlimService) => svc.ingress.map((i) => i.ip ?? i.hostname ?? '').filter(Boolean);

export async function planMigration(
  services: readonly SlimService[],
  official: OfficialController,
  adoption: LoadBalancerAdoption,
  clusterID: string,
  officialCluster: string,
  /** Service UID → load balancer id of the hand-overs a previous --yes recorded (hand-overs.ts). */
  handOvers: ReadonlyMap<string, string>,
  /**
   * This cluster's Nodes: a load balancer is planned `adopt` only if it balances to them alone (at
   * least one backend, every one of them), the check of --adopt-official (service-sync.ts adoptable):
   * an official name or a do-loadbalancer-name is no identity.
   */
  nodes?: readonly LoadBalancerNode[],
): Promise<ServicePlan[]> {
  const rules = { clusterID };
  const ours = services.filter((s) => wantsLoadBalancer(s, rules));
  const recorded = (svc: SlimService) =>
    svc.annotations[ANNOTATION_ADOPTED_LOAD_BALANCER] !== undefined &&
    handOvers.get(svc.uid) === svc.annotations[ANNOTATION_ADOPTED_LOAD_BALANCER];
  // An annotation no --yes recorded is no hand-over (anyone who may edit the Service can write it):
  // the official load balancer is looked for as if it were not there.
  // With what the other Services claim (their ingress, hand-over records, id annotations): a Service
  // naming another's load balancer is not matched to it (DigitalOcean's claimRefusal).
  const requests = ours.map((s) => {
    const { adoptedID: _, ...described } = describeRequest(s, [], rules);
    const request = { ...described, claims: claimsOf(described, handOvers, () => services) };
    return recorded(s) ? { ...request, adoptedID: s.annotations[ANNOTATION_ADOPTED_LOAD_BALANCER] } : request;
  });
  const found = await adoption.findOfficial(
    requests,
    officialCluster,
    undefined,
    nodes ? { withBackends: true } : undefined,
  );
  // The backends decide below; the plan does not show them.
  const backendsOf = new Map<string, string[]>();
  for (const [uid, lb] of found) {
    if (lb.backends) backendsOf.set(uid, lb.backends);
    delete lb.backends;
  }
  // One load balancer named by several Services is shared: ccm manages a load balancer as a whole,
  // for one Service, so it is handed to none of them.
  const users = new Map<string, string[]>();
  for (const svc of ours) {
    const lb = found.get(svc.uid);
    // A Service whose own match was refused does not share it: it is not handed that load balancer.
    if (lb && !lb.refusal) users.set(lb.id, [...(users.get(lb.id) ?? []), `${svc.namespace}/${svc.name}`]);
  }
  return ours.map((svc): ServicePlan => {
    const common = {
      namespace: svc.namespace,
      name: svc.name,
      ingress: ingressOf(svc),
      finalised: svc.finalizers.includes(FINALIZER_LOAD_BALANCER_CLEANUP),
      officialAnnotations: Object.fromEntries(
        official.serviceAnnotations.flatMap((k) => (svc.annotations[k] ? [[k, svc.annotations[k]]] : [])),
      ),
      tags: [] as string[],
    };
    const lb = found.get(svc.uid);
    const handed = svc.annotations[ANNOTATION_ADOPTED_LOAD_BALANCER];
    if (handed && !recorded(svc) && lb?.id !== handed) {
      return {
        ...common,
        action: 'mismatch',
        ...(lb ? { loadBalancer: lb } : {}),
        note: `carries ${ANNOTATION_ADOPTED_LOAD_BALANCER}: ${handed}, which no ccm migrate --yes recorded${lb ? ` (the official load balancer is ${lb.name}, ${lb.id})` : ''}: ccm ignores that annotation; remove it`,
      };
    }
    if (handed && recorded(svc)) {
      return {
        ...common,
        action: 'adopted',
        ...(lb ? { loadBalancer: lb } : {}),
        note: `already handed to ccm (${ANNOTATION_ADOPTED_LOAD_BALANCER}: ${handed})`,
      };
    }
    if (!lb) {
      // A hostname (DigitalOcean's do-loadbalancer-hostname) is the annotation's own value, no proof of
      // which load balancer the Service has: an ingress of hostnames only is no address to find it by.
      const hostnamesOnly = common.ingress.length > 0 && common.ingress.every((a) => isIP(a) === 0);
      return {
        ...common,
        action: 'none',
        note: hostnamesOnly
          ? `its ingress shows no IP, only ${common.ingress.join(', ')}, which names no load balancer: check which one is the Service's, add its IP to the Service's ingress, then run ccm migrate again (docs/migrate.md)`
          : common.ingress.length > 0
            ? `its load balancer (${common.ingress.join(', ')}) is not ${official.id}'s (ccm's already, or another's): nothing to hand over`
            : `no load balancer of ${official.id} found for it: ccm builds one when it runs`,
      };
    }
    const sharers = (users.get(lb.id) ?? []).filter((k) => k !== `${svc.namespace}/${svc.name}`);
    const refusal =
      lb.refusal ??
      (sharers.length > 0
        ? `${lb.name} (${lb.id}) is shared with ${sharers.join(', ')}; ccm does not share a load balancer between Services, and leaves it alone`
        : undefined);
    if (refusal) {
      return {
        ...common,
        action: 'mismatch',
        loadBalancer: lb,
        note: `${refusal}; ccm run builds a load balancer of its own for the Service (a new address)`,
      };
    }
    const foreignAddress = common.ingress.filter((ip) => !lb.addresses.includes(ip));
    if (foreignAddress.length > 0) {
      return {
        ...common,
        action: 'mismatch',
        loadBalancer: lb,
        note: `the Service shows ${foreignAddress.join(', ')}, which ${lb.name} (${lb.id}) does not have: left alone; look at both before you migrate it`,
      };
    }
    const backends = backendsOf.get(svc.uid) ?? [];
    if (nodes && !adoptable({ ...lb, backends }, nodes)) {
      return {
        ...common,
        action: 'mismatch',
        loadBalancer: lb,
        note: `${lb.name} (${lb.id}) does not balance to this cluster's Nodes alone (${backends.length === 0 ? 'no backends' : `backends ${backends.join(', ')}`}): left alone, it may be another cluster's; ccm run builds a load balancer of its own for the Service (a new address)`,
      };
    }
    const tags = adoption.ownershipTags(lb, clusterID).add.filter((t) => !lb.tags.includes(t));
    return { ...common, action: 'adopt', loadBalancer: lb, tags };
  });
}

/**
 * What ccm migrate leaves as it is, said once: the Secrets are under what it found, and a Service it
 * leaves alone has the reason in its own row (NOTE), so neither is repeated here.
 */
function untouchedLines(
  workloads: readonly FoundWorkload[],
  leases: readonly { name: string; holder?: string }[],
): string[] {
  return [
    ...workloads.map((w) =>
      w.replicas === 0
        ? `${w.kind} ${w.namespace}/${w.name}: scaled to 0 already; keep it so while ccm runs`
        : `${w.kind} ${w.namespace}/${w.name} (${w.replicas} replica${w.replicas === 1 ? '' : 's'}): stop it yourself before ccm runs${w.kind === 'Deployment' ? ` (kubectl -n ${w.namespace} scale deployment/${w.name} --replicas=0)` : ''}; ccm migrate does not change it`,
    ),
    ...leases.map(
      (l) =>
        `Lease kube-system/${l.name}: left as it is; ccm elects on the same name by default, so only one of the two leads at a time`,
    ),
    'every load balancer stays (ccm migrate creates and deletes none), with its name, id, addresses, listeners and backends',
    'finalizers and every other annotation of the Services',
  ];
}

async function readBackup(http: KubeTransport): Promise<Map<string, BackupRecord> | undefined> {
  try {
    const cm = await http.request<{ data?: Record<string, string> }>({
      method: 'GET',
      path: `/api/v1/namespaces/kube-system/configmaps/${MIGRATION_BACKUP_CONFIGMAP}`,
    });
    return new Map(
      Object.entries(cm.data ?? {}).map(([key, value]) => [key, JSON.parse(value) as BackupRecord]),
    );
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

/** What the backup may take of the 1 MiB (etcd's and the API server's limit) an object holds. */
const BACKUP_LIMIT = 900 * 1024;

/** The Service annotations `apply` writes, and so the only ones `rollback` gives back. */
const MIGRATE_WRITES = [ANNOTATION_ADOPTED_LOAD_BALANCER] as const;

/** ConfigMap keys allow [-._a-zA-Z0-9]: namespace and name, which cannot hold "_", joined by one. */
const backupKey = (svc: { namespace: string; name: string }) => `${svc.namespace}_${svc.name}`;

async function apply(
  http: KubeTransport,
  adoption: LoadBalancerAdoption,
  plans: readonly ServicePlan[],
  services: readonly SlimService[],
  backup: Map<string, BackupRecord> | undefined,
): Promise<boolean> {
  const todo = plans.filter((p) => p.action === 'adopt' && p.loadBalancer);
  if (todo.length === 0) return false;
  const byKey = new Map(services.map((s) => [serviceKey(s), s]));
  // The backup first: an apply stopped half-way can still be rolled back. A record already there
  // is the state before the first apply, and is never overwritten.
  const records: Record<string, string> = {};
  for (const p of todo) {
    const svc = byKey.get(serviceKey(p)) as SlimService;
    if (backup?.has(backupKey(p))) continue;
    const record: BackupRecord = {
      namespace: svc.namespace,
      name: svc.name,
      uid: svc.uid,
      annotations: Object.fromEntries(
        MIGRATE_WRITES.flatMap((k) => (svc.annotations[k] !== undefined ? [[k, svc.annotations[k]]] : [])),
      ),
      loadBalancer: p.loadBalancer as ForeignLoadBalancer,
    };
    records[backupKey(p)] = JSON.stringify(record);
  }
  const size = [...(backup?.entries() ?? [])]
    .map(([k, r]) => k.length + JSON.stringify(r).length)
    .concat(Object.entries(records).map(([k, v]) => k.length + v.length))
    .reduce((a, b) => a + b, 0);
  if (size > BACKUP_LIMIT) {
    throw new UsageError(
      `the backup of ${todo.length} Services would take ${size} bytes, more than one ConfigMap holds (1 MiB); nothing was written: hand them over with ccm run --adopt-official instead`,
    );
  }
  const path = `/api/v1/namespaces/kube-system/configmaps`;
  if (!backup) {
    await http.request({
      method: 'POST',
      path: `${path}?fieldManager=${FIELD_MANAGER}`,
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: MIGRATION_BACKUP_CONFIGMAP,
          namespace: 'kube-system',
          labels: { 'app.kubernetes.io/managed-by': 'ccm' },
          annotations: { 'ccm.io/purpose': 'what `ccm migrate --rollback` restores' },
        },
        data: records,
      },
      discardResponse: true,
    });
  } else if (Object.keys(records).length > 0) {
    await http.request({
      method: 'PATCH',
      path: `${path}/${MIGRATION_BACKUP_CONFIGMAP}?fieldManager=${FIELD_MANAGER}`,
      contentType: 'application/merge-patch+json',
      body: { data: records },
      discardResponse: true,
    });
  }
  for (const p of todo) {
    const lb = p.loadBalancer as ForeignLoadBalancer;
    if (p.tags.length > 0) await adoption.setTags(lb, [...lb.tags, ...p.tags]);
    const svc = byKey.get(serviceKey(p)) as SlimService;
    await patchAnnotations(http, svc, { [ANNOTATION_ADOPTED_LOAD_BALANCER]: lb.id });
  }
  return true;
}

async function readService(
  http: KubeTransport,
  ref: { namespace: string; name: string },
): Promise<SlimService | undefined> {
  try {
    return slimService(
      await http.request({
        method: 'GET',
        path: `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/services/${encodeURIComponent(ref.name)}`,
      }),
    );
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

async function patchAnnotations(
  http: KubeTransport,
  svc: SlimService,
  annotations: Record<string, string | null>,
): Promise<void> {
  await http.request({
    method: 'PATCH',
    path: `/api/v1/namespaces/${encodeURIComponent(svc.namespace)}/services/${encodeURIComponent(svc.name)}?fieldManager=${FIELD_MANAGER}`,
    contentType: 'application/merge-patch+json',
    // Only if nobody changed the Service since it was read: its annotations are decided on as a whole.
    body: { metadata: { resourceVersion: svc.resourceVersion, annotations } },
    discardResponse: true,
  });
}

/**
 * Every Service of the backup gets back exactly what `apply` changed (the annotations it wrote, as they
 * were before; edits a person made since stay), and its load balancer its tags, in their order. The
 * backup goes last, once all of it is back.
 */
async function rollback(
  http: KubeTransport,
  adoption: LoadBalancerAdoption,
  services: readonly SlimService[],
  backup: Map<string, BackupRecord> | undefined,
  officialCluster: string,
  apply: boolean,
): Promise<Pick<MigrateResult, 'services' | 'untouched' | 'wrote'>> {
  if (!backup || backup.size === 0) {
    return {
      services: [],
      untouched: [`no backup (ConfigMap kube-system/${MIGRATION_BACKUP_CONFIGMAP}): nothing to give back`],
      wrote: false,
    };
  }
  const byKey = new Map(services.map((s) => [serviceKey(s), s]));
  // A Service made ClusterIP since (ccm then deleted its load balancer and finalizer) is no longer in
  // the listing of LoadBalancer Services, but still carries the annotation --yes wrote: read it.
  for (const record of backup.values()) {
    if (byKey.has(serviceKey(record))) continue;
    const svc = await readService(http, record);
    if (svc) byKey.set(serviceKey(svc), svc);
  }
  const plans: ServicePlan[] = [];
  const untouched: string[] = [];
  const present = [...backup.values()].filter((r) => byKey.get(serviceKey(r))?.uid === r.uid);
  const current = await adoption.findOfficial(
    present.map((r) => {
      const svc = byKey.get(serviceKey(r)) as SlimService;
      // Found again by the id it recorded, whatever the official names say.
      return { ...describeRequest(svc, [], { clusterID: '' }), adoptedID: r.loadBalancer.id };
    }),
    officialCluster,
  );
  for (const record of backup.values()) {
    const svc = byKey.get(serviceKey(record));
    if (!svc || svc.uid !== record.uid) {
      untouched.push(
        `Service ${record.namespace}/${record.name} is gone since the migration: nothing to give back`,
      );
      continue;
    }
    const lb = current.get(svc.uid);
    if (!lb) {
      untouched.push(
        `load balancer ${record.loadBalancer.name} (${record.loadBalancer.id}) of Service ${svc.namespace}/${svc.name} is gone: its annotation is given back, there are no tags to give back`,
      );
    } else if (apply && JSON.stringify(lb.tags) !== JSON.stringify(record.loadBalancer.tags)) {
      await adoption.setTags(lb, record.loadBalancer.tags);
    }
    // Only what --yes wrote: every other annotation is the Service owner's, edited since or not.
    const patch: Record<string, string | null> = {};
    for (const key of MIGRATE_WRITES) {
      const was = record.annotations[key];
      if (was === undefined && key in svc.annotations) patch[key] = null;
      else if (was !== undefined && svc.annotations[key] !== was) patch[key] = was;
    }
    if (apply && Object.keys(patch).length > 0) await patchAnnotations(http, svc, patch);
    plans.push({
      namespace: svc.namespace,
      name: svc.name,
      action: 'restore',
      ingress: ingressOf(svc),
      finalised: svc.finalizers.includes(FINALIZER_LOAD_BALANCER_CLEANUP),
      officialAnnotations: {},
      loadBalancer: record.loadBalancer,
      tags: record.loadBalancer.tags,
      note: `tags and annotations ${apply ? '' : 'would be '}as they were before ccm migrate --yes`,
    });
  }
  if (!apply) {
    untouched.push('a plan: nothing was written; `ccm migrate --rollback --yes` gives it back');
    return { services: plans, untouched, wrote: false };
  }
  await http.request({
    method: 'DELETE',
    path: `/api/v1/namespaces/kube-system/configmaps/${MIGRATION_BACKUP_CONFIGMAP}`,
    discardResponse: true,
  });
  untouched.push(
    'load balancers, addresses and finalizers: as they are; start the official controller again (scale it back up) once ccm is stopped',
  );
  return { services: plans, untouched, wrote: true };
}
