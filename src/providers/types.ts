/**
 * The provider contract. A provider never touches Kubernetes objects and never reads the environment
 * itself: its configuration is resolved at the edge (flags, env, Secret) and handed to `create`.
 */

export type InstanceState = 'running' | 'stopped' | 'gone';

export type NodeAddressType = 'Hostname' | 'InternalIP' | 'ExternalIP' | 'InternalDNS' | 'ExternalDNS';

export interface NodeAddress {
  type: NodeAddressType;
  address: string;
}

export interface Instance {
  providerID: string;
  name: string;
  state: InstanceState;
  /** Instance type (size, flavor, package); empty when the cloud has none. */
  type: string;
  region: string;
  zone: string;
  addresses: NodeAddress[];
  /** Extra Node labels the cloud offers; never in the kubernetes.io / k8s.io domains. */
  labels: Record<string, string>;
}

export interface Instances {
  /**
   * Every instance, in one (paginated) sweep. Throws when any page fails: a partial listing is never
   * returned, because callers read absence from it.
   */
  list(signal?: AbortSignal): Promise<Instance[]>;
  /**
   * One instance by its provider ID. The one rule for "gone": this throws NotFoundError only when the
   * cloud positively says the instance does not exist (its own not-found answer, or a record in a
   * terminal deleted state); any other failure throws another error. It never returns an instance
   * with state `gone`: that state is only for listings of clouds that keep deleted records.
   */
  get(providerID: string, signal?: AbortSignal): Promise<Instance>;
}

/** A port of a LoadBalancer Service, as the load balancer must expose it. */
export interface LoadBalancerPort {
  name: string;
  protocol: 'TCP' | 'UDP' | 'SCTP';
  port: number;
  nodePort: number;
}

/** A backend Node, as the provider needs it: no Kubernetes object crosses this line. */
export interface LoadBalancerNode {
  name: string;
  /** Empty when the Node has none yet; providers match by name then, as for instances. */
  providerID: string;
  addresses: NodeAddress[];
}

/** Everything a provider may read of one LoadBalancer Service, described by the controller. */
export interface LoadBalancerRequest {
  /** Cloud-side name: "a" + the Service UID without dashes, cut to 32 characters (the reference's). */
  name: string;
  /**
   * Cluster identity for the ownership tag: unique by default (from the kube-system namespace UID),
   * `--cluster-name` overrides. A provider never adopts, changes or deletes a resource without it.
   */
  clusterID: string;
  service: {
    namespace: string;
    name: string;
    uid: string;
    annotations: Readonly<Record<string, string>>;
    /** spec.loadBalancerIP, deprecated upstream but still asked for. */
    loadBalancerIP?: string;
    loadBalancerSourceRanges: string[];
    externalTrafficPolicy: 'Cluster' | 'Local';
    /** Set with externalTrafficPolicy Local: the node port of the health check. */
    healthCheckNodePort?: number;
    sessionAffinity: 'None' | 'ClientIP';
    ipFamilies: ('IPv4' | 'IPv6')[];
  };
  ports: LoadBalancerPort[];
  nodes: LoadBalancerNode[];
  /**
   * The cloud id of a load balancer the official controller built for this Service and that was handed
   * to ccm (by `ccm migrate`, or found with `ccm run --adopt-official`). The provider then uses exactly
   * that one, under its own name and tags, updated in place: never a second one, never a rename.
   */
  adoptedID?: string;
  /**
   * What the cluster's Services say about load balancers: this Service's ingress addresses, and each
   * other Service's annotations, ingress and hand-over record. A provider that lets a Service name its
   * load balancer by id (DigitalOcean) takes it only when no other Service claims it.
   */
  claims?: LoadBalancerClaims;
  /**
   * The Service is being deleted: an identifying annotation that names nothing ccm could own (a
   * malformed id) is ignored rather than refused, so that the finalizer can still go.
   */
  deleting?: boolean;
}

export interface LoadBalancerClaims {
  ownIngress: string[];
  others: {
    service: string;
    uid: string;
    /** The load balancer name derived from its UID (the request's `name` for that Service). */
    name: string;
    annotations: Readonly<Record<string, string>>;
    ingress: string[];
    handedOver?: string;
  }[];
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  /** `Proxy` where the cloud's load balancer proxies rather than passes the VIP through. */
  ipMode?: 'VIP' | 'Proxy';
}

export interface LoadBalancerStatus {
  ingress: LoadBalancerIngress[];
  /**
   * Annotations the provider keeps on the Service (e.g. DigitalOcean's load-balancer-id, an address
   * allocation); the controller writes them, and hands them back in `service.annotations`.
   */
  annotations?: Record<string, string>;
}

/**
 * The load balancer capability (reference: cloudprovider.LoadBalancer). Every method is idempotent;
 * a step still in progress in the cloud throws RetryableError(retryAfterMs), a bad annotation throws
 * InvalidConfigError naming the annotation and its accepted values.
 */
export interface LoadBalancers {
  /** The load balancer of this Service, or undefined when ccm has none for it. */
  get(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus | undefined>;
  /** Creates or updates it to match the request, and returns its status. */
  ensure(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus>;
  /** Only the backend Nodes changed. */
  updateNodes(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void>;
  /** Removes what ccm created for this Service; nothing when it is already gone. */
  delete(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void>;
  /**
   * Optional: why, on deletion (`req.deleting`), an identifying annotation is ignored (it names no
   * load balancer ccm could own); the controller says it once in an Event.
   */
  ignoredOnDelete?(req: LoadBalancerRequest): string | undefined;
  /**
   * Optional: called with every LoadBalancer Service the controller knows before its first ensure
   * (and after each relist), so a provider that records state on Services (Cloudlycke's address
   * allocations) recovers it from them, never from memory alone.
   */
  observe?(services: readonly LoadBalancerRequest[]): void;
  /** Taking over the official controller's load balancers; absent where the cloud has nothing to take. */
  adoption?: LoadBalancerAdoption;
}

/**
 * The cloud's official controller, as `ccm migrate` and `ccm doctor` recognise it in a cluster. All
 * names are the ones its own published manifests and code use (each provider cites them).
 */
export interface OfficialController {
  /** The value of `ccm migrate --from`. */
  id: string;
  /** One line: what it is and where it comes from. */
  description: string;
  /** Names of its Deployment or DaemonSet (any namespace). */
  workloads: readonly string[];
  /** A container image of its workload contains one of these. */
  images: readonly string[];
  /** Its leader-election Lease (kube-system), when its manifests turn leader election on. */
  leases: readonly string[];
  /** Whether its published manifests run it with --leader-elect=false (then it holds no Lease). */
  leaderElectOffByDefault: boolean;
  /** The Secrets and ConfigMaps it reads in kube-system. */
  secrets: readonly string[];
  configMaps: readonly string[];
  /** Whether ccm reads that Secret as it is (same keys, same format). */
  secretCompatible: boolean;
  /** Service annotations it writes on the Services it serves. */
  serviceAnnotations: readonly string[];
  /** The cluster name its load balancer names and tags carry when it was not given one. */
  defaultClusterName?: string;
}

/** A load balancer of the cloud, as `ccm migrate` shows and hands over. */
export interface ForeignLoadBalancer {
  id: string;
  name: string;
  /** Every address a client reaches it on (the Service's ingress). */
  addresses: string[];
  /** The tags as the cloud holds them, in its order (restored byte for byte on rollback). */
  tags: string[];
  /**
   * Why it is found but never handed to ccm (shared by several Services, or not built by the official
   * controller), in one line; absent when it may be.
   */
  refusal?: string;
  /**
   * Its backends, each as a provider ID (OpenStack's members traced to the server whose port holds the
   * address on the member's subnet; one that no port explains is left as a string no Node has), when
   * asked for (`withBackends`): --adopt-official takes it only when all are this cluster's Nodes.
   */
  backends?: string[];
  /**
   * Backends whose server the cloud no longer has (a Node scaled down): no one's, so they count neither
   * for nor against the load balancer being this cluster's, and ccm removes them when it updates it.
   */
  departed?: string[];
}

export interface LoadBalancerAdoption {
  /**
   * The official controller's load balancer of each Service (keyed by Service UID), found by its own
   * naming and tagging rules and the ids it recorded on the Service. One cloud listing for all.
   * `officialCluster` is the cluster name it was run with (its --cluster-name).
   */
  findOfficial(
    services: readonly LoadBalancerRequest[],
    officialCluster: string,
    signal?: AbortSignal,
    options?: { withBackends?: boolean },
  ): Promise<Map<string, ForeignLoadBalancer>>;
  /**
   * The tags ccm adds next to the official ones to mark the load balancer as this cluster's (empty
   * where the cloud cannot tag an existing load balancer: the adoption is then recorded on the
   * Service only), and why, in one line.
   */
  ownershipTags(lb: ForeignLoadBalancer, clusterID: string): { add: string[]; note?: string };
  /** Sets the load balancer's tags to exactly these (adds ccm's mark; rollback gives the old list back). */
  setTags(lb: ForeignLoadBalancer, tags: readonly string[], signal?: AbortSignal): Promise<void>;
}

/** A Node a route sends traffic to, as the provider needs it: no Kubernetes object crosses this line. */
export interface RouteTarget {
  name: string;
  providerID: string;
  addresses: NodeAddress[];
}

/** One route of this cluster in the cloud: traffic to `destinationCIDR` goes to `nextHop`. */
export interface Route {
  /** The cloud's name for it (what `delete` is given back); the destination where the cloud has none. */
  name: string;
  destinationCIDR: string;
  /** The address the cloud sends the traffic to (a Node's InternalIP). */
  nextHop: string;
  /** The Node's name, where the cloud records it; else the controller finds it by `nextHop`. */
  targetNode?: string;
  /**
   * The route exists but what must come with it does not (OpenStack: the Pod CIDR is missing from the
   * port's allowed address pairs): the controller creates it again, and its Node is not RouteCreated.
   */
  incomplete?: boolean;
}

/**
 * The route capability (reference: cloudprovider.Routes): Pod network routes in the cloud, for
 * clusters that route Pod traffic natively instead of through an overlay. Routes carry the cluster
 * identity as load balancers do: `list` returns only routes ccm created for `clusterID`, and a route
 * ccm did not create for this cluster is never changed or deleted, even one to the same destination.
 */
export interface Routes {
  /** Every route of this cluster, in one listing (a partial listing throws). */
  list(clusterID: string, signal?: AbortSignal): Promise<Route[]>;
  /**
   * Sends `destinationCIDR` to the Node (its InternalIP of the CIDR's family); `nameHint` is the
   * Node's UID. Idempotent: a route of this cluster that already exists is success. A route to the
   * same destination that is not this cluster's throws InvalidConfigError naming it. `clusterCIDR`
   * is the --cluster-cidr entry holding destinationCIDR (Cloudlycke limits its `ip rule` to it).
   */
  create(
    clusterID: string,
    nameHint: string,
    route: { targetNode: RouteTarget; destinationCIDR: string; clusterCIDR?: string },
    signal?: AbortSignal,
  ): Promise<void>;
  /** Removes one route `list` returned, and what ccm added with it; nothing when it is already gone. */
  delete(clusterID: string, route: Route, signal?: AbortSignal): Promise<void>;
}

/** A Node's role, from its well-known labels (node-role.kubernetes.io/control-plane, …/worker). */
export type NodeRole = 'control-plane' | 'worker';

/** A Node ccm manages, as a provider that keeps groups on each Node's instance needs it. */
export interface GroupedNode {
  name: string;
  providerID: string;
  roles: readonly NodeRole[];
}

/** What one instance's groups would become. */
export interface InstanceGroupsChange {
  providerID: string;
  /** The managed Node it belongs to; absent when none has it any more (ccm's groups go). */
  node?: string;
  /** The groups ccm keeps on it afterwards; empty: ccm's own groups are taken off. */
  groups: string[];
  /** One line, what changes: "tag triton.cmon.groups: add a, b; remove c". */
  change: string;
  /** Why it is left alone (e.g. another cluster's record on it); nothing is written then. */
  refused?: string;
}

/**
 * What an operator should know of a Node's instance that is no change: Triton's CMON series of the
 * Node will carry another Node's name, or a name that is not the Node's (its machine's name decides).
 */
export interface InstanceGroupsNote {
  node: string;
  providerID: string;
  note: string;
}

/** One listing's plan: the changes to make, and the notes on the Nodes' instances. */
export interface InstanceGroupsPlan {
  changes: InstanceGroupsChange[];
  notes: InstanceGroupsNote[];
}

/**
 * Groups a cloud's monitoring reads from each Node's instance (Triton: CMON's `triton.cmon.groups`
 * tag). ccm merges its groups with those others set, records what it added, and takes off only its
 * own, from an instance whose Node left too. Changes go one instance at a time, each from the
 * instance's tags as they are when it is made.
 */
export interface InstanceGroups {
  /**
   * The changes that make exactly `nodes`' instances carry this cluster's groups (one listing), and
   * the notes on them.
   */
  plan(clusterID: string, nodes: readonly GroupedNode[], signal?: AbortSignal): Promise<InstanceGroupsPlan>;
  /** Makes one planned change (read again, merged, written, read back). */
  apply(clusterID: string, change: InstanceGroupsChange, signal?: AbortSignal): Promise<void>;
  /**
   * Throws an InvalidConfigError when the cluster identity cannot name this cluster's groups: `ccm run`
   * calls it at start with its --cluster-name, as a configuration error (exit 2), not a retry.
   */
  checkCluster?(clusterID: string): void;
}

/** One credential or setting of a provider, as the official controller names it. */
export interface CredentialField {
  key: string;
  description: string;
  /** Secret values are never printed, logged, put in argv or in --json output. */
  secret: boolean;
  required: boolean;
  prompt: 'input' | 'password' | 'file' | 'editor' | 'ssh-key';
  /** Shown as the prompt's default and used when nothing else gives a value. */
  default?: string;
  /** Environment variables read at the edge, first match wins. */
  env: string[];
  /** The `ccm run` flag that fills it, before the environment (e.g. cloudlycke-route-table). */
  flag?: string;
  /** Key in the Kubernetes Secret the official controller reads, when the field lives there. */
  secretKey?: string;
  /**
   * False for a setting of ccm's own that may live in the Secret but is no credential (Triton's CMON
   * groups): `secret create` takes it from its flag or `--set`, and does not ask for it.
   */
  asked?: false;
  /**
   * For an 'editor' field: questions that build the document for someone who has none yet
   * (OpenStack's cloud.conf), and the provider's own check of the result.
   */
  builder?: DocumentBuilder;
  /** Shown before a person picks a key ('ssh-key' fields): which key to give, and how to make one. */
  advice?: string;
  /**
   * The key of a field this one is computed from when that has a value (Triton's key fingerprint,
   * from the private key): asked after it, and only when it has none.
   */
  computedFrom?: string;
}

export interface DocumentQuestion {
  key: string;
  message: string;
  /** Masked as typed, never shown back. */
  secret?: boolean;
  required?: boolean;
  default?: string;
  /** A choice instead of free text. */
  choices?: readonly { name: string; value: string }[];
  /** Asked only when this holds for the answers so far. */
  when?: (answers: Readonly<Record<string, string>>) => boolean;
  /** true, or what is wrong with the value (shown as it is typed). */
  validate?: (value: string) => true | string;
  /**
   * The cloud's address (OpenStack's auth-url): when the cloud cannot be reached with it, this
   * question alone is asked again, the other answers kept.
   */
  endpoint?: boolean;
}

export interface DocumentBuilder {
  questions: readonly DocumentQuestion[];
  /** The document from the answers; a question skipped or left empty is absent from it. */
  render(answers: Readonly<Record<string, string>>): string;
  /** true, or one line saying what is wrong with the document (the provider's own parser). */
  check(document: string): true | string;
}

export interface CredentialSchema {
  /** Secret the official controller reads (namespace kube-system), or undefined if the cloud has none. */
  secretName?: string;
  fields: CredentialField[];
}

/** Capabilities; absent optional ones mean "unsupported". */
export interface Provider {
  readonly name: string;
  readonly providerIdScheme: string;
  readonly instances: Instances;
  readonly loadBalancers?: LoadBalancers;
  readonly routes?: Routes;
  /** Where `routes` is absent: why the cloud cannot hold a Pod route, in one line citing its API. */
  readonly noRoutesReason?: string;
  /** Groups kept on each managed Node's instance (configured; absent: none). */
  readonly instanceGroups?: InstanceGroups;
  /** Its API client takes a token of the shared budget per request (ProviderDeps.takeToken). */
  readonly requestBudgeted?: boolean;
  /**
   * One cheap call that proves the credentials work (`secret create`, `doctor`); resolves to a line
   * naming who they belong to (account, project), throws UnauthorizedError / InvalidConfigError.
   */
  verifyCredentials?(signal?: AbortSignal): Promise<string>;
}

/** What a provider module exports: its description, and a factory for configured instances. */
export interface ProviderDefinition {
  readonly name: string;
  readonly providerIdScheme: string;
  readonly description: string;
  readonly credentials: CredentialSchema;
  /** Key of the value that the CLI's shared `--cloud-config <file>` flag fills, when the provider takes one. */
  readonly configFileField?: string;
  /** Key of the value that the CLI's shared `--cloud-api-url <url>` flag fills (the API base URL). */
  readonly apiUrlField?: string;
  /**
   * Builds the provider from resolved values (keyed by CredentialField.key). Throws
   * InvalidConfigError naming the missing or malformed value.
   */
  create(values: ProviderValues, deps: ProviderDeps): Provider;
  /** The Service annotations the provider reads (docs/reference/annotations.md is generated from these). */
  readonly annotations?: readonly AnnotationDoc[];
  /** What `ccm cluster prepare` sets for this cloud beyond --cloud-provider=external. */
  readonly clusterFlags?: ClusterFlags;
  /**
   * The cloud's official controllers (`ccm migrate --from`, `ccm doctor`); the first is the default.
   * Absent or empty: the cloud has none with load balancers to take over (the provider says why in
   * `noOfficialController`).
   */
  readonly officialControllers?: readonly OfficialController[];
  /** Why there is nothing to migrate from, when officialControllers is empty. */
  readonly noOfficialController?: string;
  /**
   * `ccm run`'s default request budget (--cloud-qps, --cloud-burst) where the cloud publishes its
   * limits, with what they are in words; absent: 1 a second, bursts of 10.
   */
  readonly requestBudget?: { readonly qps: number; readonly burst: number };
  /**
   * The cloud's published rate limits per credential, each a sliding window: `ccm run` keeps every
   * request it sends within them (less `margin` each), whatever --cloud-qps and --cloud-burst say,
   * which can only lower the pace. Absent: only the token bucket.
   */
  readonly rateLimits?: readonly {
    readonly windowMs: number;
    readonly max: number;
    readonly margin: number;
  }[];
}

export interface AnnotationDoc {
  key: string;
  /** The accepted values, and the default where there is one. */
  accepted: string;
  description: string;
}

export interface ClusterFlags {
  /** Extra kube-apiserver flags, without dashes (e.g. preferred kubelet address types). */
  kubeApiserver?: Record<string, string>;
  /**
   * The cloud wants the kubelet's --provider-id set at registration (it has no metadata service).
   * `cluster prepare` then finds each host's instance in the cloud listing the way `nodes init` would
   * (by Node name, else by the kubelet's --node-ip) and uses that instance's own provider ID; it
   * refuses a host it cannot match rather than guess.
   */
  kubeletProviderID?: boolean;
}

export type ProviderValues = Readonly<Record<string, string | undefined>>;

/** ProviderDeps.takeToken: waits for the budget; resolves to what to call once the request was answered (false: never sent). */
export type TakeToken = () => Promise<((sent?: boolean) => void) | undefined>;

export interface ProviderDeps {
  /** Called once per request the provider sends to its cloud (for reports and benchmarks). */
  onCloudCall?: (what: string) => void;
  /**
   * The leader gate (`ccm run`): asked before every request that changes the cloud; false refuses it
   * unsent. Pass it to the API's HttpClient (`mayWrite`), not to a token endpoint's.
   */
  mayWrite?: () => boolean;
  /**
   * The shared request budget (`ccm run`): waited for before every request the provider's API client
   * sends, retries included. A provider that uses it says so with `requestBudgeted`, and the budgeted
   * wrapper then takes no token per operation (an operation is several requests). What it resolves
   * to is called once the request was answered, or will not be sent (the cloud's own windows count a
   * request until then): HttpClient does both.
   */
  takeToken?: TakeToken;
  /**
   * The cloud refused a request for its rate limit and asked to wait `waitMs` (Retry-After,
   * DigitalOcean's ratelimit-reset, an OpenStack rate limit middleware's X-Retry-After; else the
   * client's backoff): the shared budget holds every request meanwhile. Pass it to the API's
   * HttpClient (`onRateLimited`) with takeToken.
   */
  rateLimited?: (waitMs: number) => void;
  /**
   * What a provider remembers across its re-creations (`ccm run` reloads credentials or the cloud
   * config by building a new one, while the old one's requests may still be on their way): one map
   * for the run, each provider under keys of its own name.
   */
  memory?: Map<string, unknown>;
  /**
   * Where the edge took a field's value from (or, for a field without one, where the operator's
   * Secret would hold it), in words an error line can name: "key vpc-id of Secret kube-system/do",
   * "--set vpc-id", "env DO_CLUSTER_VPC_ID", "--from-stdin". A provider's error names this rather than
   * the official Secret or variable it reads by default; undefined when the edge does not say.
   */
  origin?: (field: string) => string | undefined;
}
