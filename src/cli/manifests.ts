import { isIP } from 'node:net';
import { selectControllers } from '../controllers/manager.js';
import { parseClusterCIDRs } from '../controllers/routes.js';
import {
  LABEL_CONTROL_PLANE,
  MIGRATION_BACKUP_CONFIGMAP,
  NODE_DELETIONS_CONFIGMAP,
  NODE_DELETIONS_NAMESPACE,
  TAINT_CONTROL_PLANE,
  TAINT_NOT_READY,
  TAINT_UNINITIALIZED,
} from '../kube/well-known.js';
import { encryptedOrLocal } from '../plain-http.js';
import type { ProviderDefinition } from '../providers/types.js';
import { UsageError } from './errors.js';
import { parseEnv } from './flag-values.js';
import { objectYaml } from './output/object-yaml.js';
import { checkCloudApiUrl, parseSecretRef } from './provider-config.js';

/**
 * Everything an operator applies to run ccm in a cluster, generated from what the enabled controllers
 * call (one source of truth: the tests apply exactly this output and prove each RBAC rule is needed).
 */

export interface ManifestOptions {
  image: string;
  namespace: string;
  controllers: string;
  /** namespace/name of the credentials Secret; default: the official controller's, when the cloud has one. */
  credentialsSecret?: string;
  clusterName?: string;
  /** --cluster-cidr of `ccm run`: the route controller runs only with it. */
  clusterCIDR?: string;
  cronjob: boolean;
  leaseName: string;
  /**
   * Where the pods may run. Default: control-plane Nodes only (they hold the cloud token and may
   * delete Nodes, so not beside tenant workloads); a node selector for clusters whose control plane
   * runs elsewhere (managed, or without kubelets); or, explicitly, any Node.
   */
  placement?: Placement;
  /** Default IfNotPresent; Never for an image loaded onto each Node by hand (no registry). */
  imagePullPolicy?: ImagePullPolicy;
  /** --cloud-api-url of the pods' `ccm run` and `ccm nodes init`. */
  cloudApiUrl?: string;
  /** --insecure-cloud-api: a plain-http cloudApiUrl on the Node's loopback is taken (see checkPodCloudApiUrl). */
  insecureCloudApi?: boolean;
  /** --log-level of the pods, when not the default (info). */
  logLevel?: string;
  /** --request-timeout of the pods, in ms (0: none). */
  requestTimeoutMs?: number;
  /**
   * A Deployment of this many replicas (one per Node) instead of a DaemonSet; --any-node's default is 2.
   * The Nodes are still those of `placement`.
   */
  replicas?: number;
  /** Default true. Without it the pod of `ccm run` is the only one: a Deployment of one replica. */
  leaderElect?: boolean;
  /** Tolerations of both pods, after those every ccm pod has (see podSpec). */
  tolerations?: Record<string, unknown>[];
  /** The resources of `ccm run`'s container, instead of RUN_RESOURCES. */
  resources?: Record<string, unknown>;
  /** Further arguments of `ccm run`, after those the manifests give it. */
  extraArgs?: string[];
  /**
   * Further environment variables of both pods (e.g. HTTPS_PROXY), after those ccm sets, in name
   * order (the order of the chart's `range` over its `env` map).
   */
  env?: Record<string, string>;
  /**
   * A Service and a Prometheus Operator ServiceMonitor for /metrics, and the one RBAC rule the
   * scraper (this ServiceAccount, namespace/name) needs for ccm's delegated authorisation.
   */
  metrics?: { scraper: { namespace: string; name: string } };
}

/** Checks only the generator of the Helm chart skips: its values are placeholders (src/cli/manifests-helm.ts). */
export interface RenderMode {
  placeholders?: boolean;
}

export type ImagePullPolicy = 'IfNotPresent' | 'Always' | 'Never';

export type Placement =
  | { kind: 'control-plane' }
  | { kind: 'node-selector'; labels: Record<string, string> }
  | { kind: 'any-node' };

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export type K8sObject = Record<string, unknown> & {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

const APP = 'ccm';
/** The Prometheus of kube-prometheus (and of its Helm chart's default release name). */
export const METRICS_SCRAPER_DEFAULT = 'monitoring/prometheus-k8s';
const SERVICE_ACCOUNT = 'ccm';
/** The CronJob has an identity of its own, so that each role is exactly what its job calls. */
const NODES_INIT_SERVICE_ACCOUNT = 'ccm-nodes-init';
const LABELS = { 'app.kubernetes.io/name': APP };
const RUN_PORT = 10258;
const CONFIG_MOUNT = '/etc/ccm';

/** The cluster-wide rules of `ccm run` with these controllers, each with the call that needs it. */
export function clusterRules(controllers: readonly string[]): PolicyRule[] {
  const has = (name: string) => controllers.includes(name);
  const nodeVerbs = new Set(['list', 'watch']); // the Node informer, shared by every controller
  if (has('cloud-node') || has('cloud-node-lifecycle')) {
    nodeVerbs.add('get'); // re-read after a conflict (409)
    nodeVerbs.add('patch'); // labels, provider ID, taints
  }
  if (has('cloud-node-lifecycle')) nodeVerbs.add('delete');
  const rules: PolicyRule[] = [{ apiGroups: [''], resources: ['nodes'], verbs: sorted(nodeVerbs) }];
  // Addresses (cloud-node); the NetworkUnavailable condition (route).
  if (has('cloud-node') || has('route'))
    rules.push({ apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] });
  if (has('service')) {
    rules.push(
      { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] },
      // Finalizer, annotations and ingress all go through the status subresource.
      { apiGroups: [''], resources: ['services/status'], verbs: ['patch'] },
    );
  }
  if (has('service') || has('route')) {
    // The cluster identity of ownership tags (load balancers, routes) is the kube-system namespace's UID.
    rules.push({
      apiGroups: [''],
      resources: ['namespaces'],
      verbs: ['get'],
      resourceNames: ['kube-system'],
    });
  }
  rules.push({ apiGroups: [''], resources: ['events'], verbs: ['create'] });
  // The deletion brake: whether a held Node was told already (its NodeDeletionHeld Events).
  if (has('cloud-node-lifecycle')) rules.push({ apiGroups: [''], resources: ['events'], verbs: ['list'] });
  // /metrics over HTTPS: the scraper's token and its right to `get /metrics`, asked of the API server.
  rules.push(
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  );
  return rules;
}

/** The rules of the one-shot `ccm nodes init` (no watch: it lists once). */
export function nodesInitRules(): PolicyRule[] {
  return [
    { apiGroups: [''], resources: ['nodes'], verbs: ['delete', 'get', 'list', 'patch'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    // The deletion brake: whether a held Node was told already.
    { apiGroups: [''], resources: ['events'], verbs: ['list'] },
  ];
}

/**
 * The deletion brake's record of deletions (src/kube/deletion-record.ts), a Role in kube-system for
 * whoever deletes Nodes (`ccm run`'s lifecycle controller, the CronJob): created by the first
 * deletion (`create` cannot be limited by name), then read and updated by name, nothing else.
 */
export function nodeDeletionsRules(): PolicyRule[] {
  return [
    { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
    {
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get', 'update'],
      resourceNames: [NODE_DELETIONS_CONFIGMAP],
    },
  ];
}

function sorted(set: Set<string>): string[] {
  return [...set].sort();
}

/**
 * An image reference as the container runtime parses it (distribution/reference): an optional
 * registry host (any case, a port, or an IPv6 address in brackets), a lower-case repository path,
 * an optional tag and an optional digest. Anything else is refused here rather than by the kubelet.
 */
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*';
const IMAGE_REFERENCE = new RegExp(
  `^(?:(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:.]+\\])(?::[0-9]+)?/)?` +
    `${PATH_COMPONENT}(?:/${PATH_COMPONENT})*` +
    '(?::[\\w][\\w.-]{0,127})?' +
    '(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$',
);
/** The same grammar for the chart's Go templates (RE2 reads it as JavaScript does). */
export const IMAGE_PATTERN = IMAGE_REFERENCE.source;

/**
 * Refuses an image a Node would pull from itself: with `localhost/…` (what podman names a local
 * build) or `127.0.0.1:5000/…`, a Node without the image asks whatever listens on its own loopback,
 * which any local user can serve, and the pod that image runs holds the cloud token. With
 * imagePullPolicy Never nothing is ever pulled: the name only finds the image loaded on the Node.
 */
export function checkImage(image: string, pullPolicy: ImagePullPolicy = 'IfNotPresent'): void {
  const reference = image.trim();
  if (!IMAGE_REFERENCE.test(reference)) {
    // The usual slip: a capital letter in the repository, which the grammar keeps lower case.
    const slash = reference.indexOf('/');
    const domain =
      slash > 0 && /[.:]|^localhost$/i.test(reference.slice(0, slash)) ? reference.slice(0, slash + 1) : '';
    const rest = reference.slice(domain.length);
    const at = rest.search(/[:@]/);
    const lowered = `${domain}${at < 0 ? rest.toLowerCase() : `${rest.slice(0, at).toLowerCase()}${rest.slice(at)}`}`;
    throw new UsageError(
      lowered !== reference && IMAGE_REFERENCE.test(lowered)
        ? `--image: expected an image reference, whose repository name is lower case (${lowered}), got ${JSON.stringify(image)}`
        : `--image: expected an image reference (e.g. registry.example.com/ccm:0.1.0), got ${JSON.stringify(image)}`,
    );
  }
  const first = (reference.split('/')[0] ?? '').toLowerCase();
  // The reference grammar (distribution/reference): the first component is a registry host only
  // when it has a "." or ":" or is "localhost".
  const isRegistry = reference.includes('/') && (/[.:]/.test(first) || first === 'localhost');
  if (!isRegistry || pullPolicy === 'Never') return;
  const host = first.startsWith('[') ? first.slice(1, first.indexOf(']')) : first.replace(/:\d+$/, '');
  const loopback =
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    (isIP(host) === 4 && host.startsWith('127.')) ||
    host === '::1' ||
    host === '0.0.0.0';
  if (loopback) {
    throw new UsageError(
      `--image ${reference} names a registry on the Node itself, which any local user could serve; push the image to a registry and pass that name (pinned by digest), or load it onto each Node and add --image-pull-policy Never`,
    );
  }
}

/**
 * The pods send the cloud token to --cloud-api-url from their Node's own network (hostNetwork). Plain
 * http there carries it unencrypted: to another machine across the network (which `ccm run` refuses
 * anyway, so the pods would only crash), or to whatever listens on that port of each Node's loopback,
 * which any local user may serve, as a `localhost/` image is refused for. The loopback case is taken
 * with --insecure-cloud-api, for a proxy the operator runs on every Node or a test cloud.
 */
export function checkPodCloudApiUrl(url: string, insecure: boolean): void {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:') return;
  if (!encryptedOrLocal(parsed)) {
    throw new UsageError(
      `--cloud-api-url ${url} is plain http to another machine: the token would cross the network unencrypted, and \`ccm run\` in the pods refuses it; give the cloud's https URL`,
    );
  }
  if (insecure) return;
  const port = parsed.port || '80';
  throw new UsageError(
    `--cloud-api-url ${url} is plain http: the pods use their Node's network, so each would send the token unencrypted to whatever listens on port ${port} of its Node; give the cloud's https URL (or add --insecure-cloud-api for a proxy you run on every Node)`,
  );
}

export { parseNodeSelector } from './flag-values.js';

/** Where the pods run (see ManifestOptions.placement). */
function placementOf(placement: Placement): {
  nodeSelector?: Record<string, string>;
  nodeAffinity?: Record<string, unknown>;
} {
  if (placement.kind === 'any-node') return {};
  if (placement.kind === 'node-selector') return { nodeSelector: placement.labels };
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: LABEL_CONTROL_PLANE, operator: 'Exists' }] }],
      },
    },
  };
}

function durationArg(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

export function renderManifests(
  provider: ProviderDefinition,
  options: ManifestOptions,
  mode: RenderMode = {},
): K8sObject[] {
  if (!mode.placeholders) checkOptions(provider, options);
  const placement = options.placement ?? { kind: 'control-plane' };
  const { enabled, unavailable } = selectControllers(options.controllers);
  if (unavailable.length > 0) {
    throw new UsageError(`--controllers names ${unavailable.join(', ')}, which this build does not have`);
  }
  if (enabled.length === 0) throw new UsageError('--controllers enables no controller; use e.g. "*"');
  const replicas = options.replicas ?? (placement.kind === 'any-node' ? 2 : undefined);
  const leaderElect = options.leaderElect ?? true;
  return renderObjects(provider, options, enabled, placement, replicas, leaderElect);
}

/** What `ccm manifests` refuses of its values (the chart's helpers refuse the same, in Go templates). */
function checkOptions(provider: ProviderDefinition, options: ManifestOptions): void {
  for (const name of Object.keys(options.env ?? {})) parseEnv(`${name}=`);
  checkImage(options.image, options.imagePullPolicy);
  if (options.cloudApiUrl !== undefined) {
    checkCloudApiUrl(provider, options.cloudApiUrl);
    checkPodCloudApiUrl(options.cloudApiUrl, options.insecureCloudApi ?? false);
  }
  if (options.clusterCIDR !== undefined) {
    try {
      parseClusterCIDRs(options.clusterCIDR);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  if (options.replicas !== undefined && (!Number.isInteger(options.replicas) || options.replicas < 1)) {
    throw new UsageError(`--replicas: expected a whole number of at least 1, got ${options.replicas}`);
  }
  const replicas = options.replicas ?? (options.placement?.kind === 'any-node' ? 2 : undefined);
  if (options.leaderElect === false && replicas !== 1) {
    // Two pods without the Lease would both patch Nodes and delete them; a DaemonSet may run many.
    throw new UsageError(
      '--no-leader-elect needs one pod of `ccm run`: add --replicas 1 (a Deployment of one replica), or keep leader election',
    );
  }
}

function renderObjects(
  provider: ProviderDefinition,
  options: ManifestOptions,
  enabled: string[],
  placement: Placement,
  replicas: number | undefined,
  leaderElect: boolean,
): K8sObject[] {
  const { nodeSelector, nodeAffinity } = placementOf(placement);
  const ns = options.namespace;
  const secretRef = options.credentialsSecret
    ? parseSecretRef(options.credentialsSecret)
    : provider.credentials.secretName
      ? { namespace: 'kube-system', name: provider.credentials.secretName }
      : undefined;
  // A cloud whose state is a file (Cloudlycke's inventory) gets it from a ConfigMap the operator creates.
  const configMap = provider.configFileField && !secretRef ? `ccm-${provider.name}-config` : undefined;
  const meta = (name: string, component: string, namespace?: string) => ({
    name,
    ...(namespace ? { namespace } : {}),
    labels: { ...LABELS, 'app.kubernetes.io/component': component },
  });

  // What `ccm run` and `ccm nodes init` share: every flag given here reaches both pods.
  const providerArgs = [
    `--provider=${provider.name}`,
    ...(secretRef ? [`--credentials-secret=${secretRef.namespace}/${secretRef.name}`] : []),
    ...(configMap ? [`--cloud-config=${CONFIG_MOUNT}/config`] : []),
    ...(options.cloudApiUrl ? [`--cloud-api-url=${options.cloudApiUrl}`] : []),
    ...(options.logLevel && options.logLevel !== 'info' ? [`--log-level=${options.logLevel}`] : []),
    ...(options.requestTimeoutMs !== undefined
      ? [`--request-timeout=${durationArg(options.requestTimeoutMs)}`]
      : []),
  ];
  const objects: K8sObject[] = [];
  if (ns !== 'kube-system' && ns !== 'default') {
    objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: LABELS } });
  }
  objects.push({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(SERVICE_ACCOUNT, 'controller', ns),
  });
  if (options.cronjob) {
    objects.push({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: meta(NODES_INIT_SERVICE_ACCOUNT, 'nodes-init', ns),
    });
  }
  const binding = (
    kind: 'ClusterRoleBinding' | 'RoleBinding',
    name: string,
    namespace?: string,
    account = SERVICE_ACCOUNT,
  ) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: meta(name, 'controller', namespace),
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: kind === 'ClusterRoleBinding' ? 'ClusterRole' : 'Role',
      name,
    },
    subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
  });
  objects.push(
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta('system:ccm', 'controller'),
      rules: clusterRules(enabled),
    },
    binding('ClusterRoleBinding', 'system:ccm'),
  );
  if (leaderElect) {
    objects.push(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta('ccm:leader-election', 'controller', ns),
        rules: [
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
          {
            apiGroups: ['coordination.k8s.io'],
            resources: ['leases'],
            verbs: ['get', 'update'],
            resourceNames: [options.leaseName],
          },
        ],
      },
      binding('RoleBinding', 'ccm:leader-election', ns),
    );
  }
  if (enabled.includes('service')) {
    objects.push(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta('ccm:migration-record', 'controller', 'kube-system'),
        // The hand-overs of `ccm migrate --yes` (src/kube/hand-overs.ts): get on this one ConfigMap.
        rules: [
          {
            apiGroups: [''],
            resources: ['configmaps'],
            verbs: ['get'],
            resourceNames: [MIGRATION_BACKUP_CONFIGMAP],
          },
        ],
      },
      binding('RoleBinding', 'ccm:migration-record', 'kube-system'),
    );
  }
  const deleters = [
    ...(enabled.includes('cloud-node-lifecycle')
      ? [{ account: SERVICE_ACCOUNT, component: 'controller' }]
      : []),
    ...(options.cronjob ? [{ account: NODES_INIT_SERVICE_ACCOUNT, component: 'nodes-init' }] : []),
  ];
  for (const { account, component } of deleters) {
    // One Role per identity, so that each is labelled with its own component (the rule-removal test).
    const name = account === SERVICE_ACCOUNT ? 'ccm:node-deletions' : 'ccm-nodes-init:node-deletions';
    objects.push(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta(name, component, NODE_DELETIONS_NAMESPACE),
        rules: nodeDeletionsRules(),
      },
      {
        ...binding('RoleBinding', name, NODE_DELETIONS_NAMESPACE, account),
        metadata: meta(name, component, NODE_DELETIONS_NAMESPACE),
      },
    );
  }
  if (secretRef) {
    objects.push(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta('ccm:credentials', 'controller', secretRef.namespace),
        // get on this one Secret by name: never list or watch Secrets.
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: [secretRef.name] }],
      },
      {
        ...binding('RoleBinding', 'ccm:credentials', secretRef.namespace),
        subjects: [SERVICE_ACCOUNT, ...(options.cronjob ? [NODES_INIT_SERVICE_ACCOUNT] : [])].map((name) => ({
          kind: 'ServiceAccount',
          name,
          namespace: ns,
        })),
      },
    );
  }
  if (options.cronjob) {
    objects.push(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: meta('system:ccm-nodes-init', 'nodes-init'),
        rules: nodesInitRules(),
      },
      {
        ...binding('ClusterRoleBinding', 'system:ccm-nodes-init', undefined, NODES_INIT_SERVICE_ACCOUNT),
        metadata: meta('system:ccm-nodes-init', 'nodes-init'),
      },
    );
  }

  const podSpec = (component: string, args: string[]) => ({
    serviceAccountName: component === 'controller' ? SERVICE_ACCOUNT : NODES_INIT_SERVICE_ACCOUNT,
    automountServiceAccountToken: true,
    // Runs before the CNI: the pod network may not exist yet, cluster DNS may not run yet.
    hostNetwork: true,
    dnsPolicy: 'Default',
    // Nodes stay unschedulable for everything else until ccm initialises them: never be preempted.
    priorityClassName: 'system-cluster-critical',
    ...(nodeSelector ? { nodeSelector } : {}),
    ...(nodeAffinity ? { affinity: { nodeAffinity } } : {}),
    tolerations: [
      // Every Node carries this until ccm has initialised it; without it a new cluster deadlocks.
      { key: TAINT_UNINITIALIZED, operator: 'Exists', effect: 'NoSchedule' },
      // Nodes are NotReady until the CNI runs, which may itself wait for initialised Nodes.
      { key: TAINT_NOT_READY, operator: 'Exists', effect: 'NoSchedule' },
      { key: TAINT_NOT_READY, operator: 'Exists', effect: 'NoExecute' },
      { key: TAINT_CONTROL_PLANE, operator: 'Exists', effect: 'NoSchedule' },
      ...(options.tolerations ?? []),
    ],
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    containers: [
      {
        name: 'ccm',
        image: options.image,
        imagePullPolicy: options.imagePullPolicy ?? 'IfNotPresent',
        args,
        env: [
          { name: 'HOME', value: '/tmp' },
          ...Object.entries(component === 'controller' ? RUN_ENV : NODES_INIT_ENV).map(([name, value]) => ({
            name,
            value,
          })),
          ...Object.keys(options.env ?? {})
            .sort()
            .map((name) => ({ name, value: options.env?.[name] as string })),
        ],
        securityContext: {
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        },
        resources: component === 'controller' ? (options.resources ?? RUN_RESOURCES) : NODES_INIT_RESOURCES,
        ...(component === 'controller'
          ? {
              ports: [{ name: 'https', containerPort: RUN_PORT, protocol: 'TCP' }],
              livenessProbe: {
                httpGet: { path: '/healthz', port: RUN_PORT, scheme: 'HTTPS' },
                initialDelaySeconds: 10,
                periodSeconds: 10,
                failureThreshold: 3,
              },
              readinessProbe: {
                httpGet: { path: '/readyz', port: RUN_PORT, scheme: 'HTTPS' },
                periodSeconds: 5,
              },
            }
          : {}),
        volumeMounts: [
          { name: 'tmp', mountPath: '/tmp' },
          ...(configMap ? [{ name: 'config', mountPath: CONFIG_MOUNT, readOnly: true }] : []),
        ],
      },
    ],
    volumes: [
      { name: 'tmp', emptyDir: { sizeLimit: '16Mi' } },
      ...(configMap ? [{ name: 'config', configMap: { name: configMap } }] : []),
    ],
  });

  const runArgs = [
    'run',
    ...providerArgs,
    `--controllers=${options.controllers}`,
    ...(leaderElect
      ? [
          '--leader-elect',
          `--leader-elect-resource-namespace=${ns}`,
          `--leader-elect-resource-name=${options.leaseName}`,
        ]
      : ['--no-leader-elect']),
    `--secure-port=${RUN_PORT}`,
    ...(options.clusterName ? [`--cluster-name=${options.clusterName}`] : []),
    ...(options.clusterCIDR ? [`--cluster-cidr=${options.clusterCIDR}`] : []),
    ...(options.extraArgs ?? []),
  ];
  const selector = { ...LABELS, 'app.kubernetes.io/component': 'controller' };
  const controllerPod = podSpec('controller', runArgs);
  if (replicas !== undefined) {
    // Any Node may be many: two replicas (or --replicas), one per Node (hostNetwork: one port per
    // Node), rolled one at a time. A rollout needs two Nodes to run them; the DaemonSet below needs
    // no count at all.
    objects.push(
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: meta('ccm', 'controller', ns),
        spec: {
          replicas,
          selector: { matchLabels: selector },
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
          template: {
            metadata: { labels: selector },
            spec: {
              ...controllerPod,
              affinity: {
                ...(nodeAffinity ? { nodeAffinity } : {}),
                podAntiAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: [
                    { labelSelector: { matchLabels: selector }, topologyKey: 'kubernetes.io/hostname' },
                  ],
                },
              },
              terminationGracePeriodSeconds: 15,
            },
          },
        },
      },
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: meta('ccm', 'controller', ns),
        spec: { maxUnavailable: 1, selector: { matchLabels: selector } },
      },
    );
  } else {
    // One pod on each Node of the pool (control plane, or --node-selector): as many standbys as
    // Nodes, and a rollout that replaces one pod at a time, the old one gone (its Lease released)
    // before the new one needs the port. Upstream's example cloud-controller-manager is one too.
    // No PodDisruptionBudget: drains skip DaemonSet pods, and maxUnavailable needs a scalable owner.
    objects.push({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: meta('ccm', 'controller', ns),
      spec: {
        selector: { matchLabels: selector },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
        template: {
          metadata: { labels: selector },
          spec: { ...controllerPod, terminationGracePeriodSeconds: 15 },
        },
      },
    });
  }
  if (options.cronjob) {
    const labels = { ...LABELS, 'app.kubernetes.io/component': 'nodes-init' };
    const { hostNetwork, ...rest } = podSpec('nodes-init', ['nodes', 'init', ...providerArgs]);
    objects.push({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: meta('ccm-nodes-init', 'nodes-init', ns),
      spec: {
        schedule: '*/5 * * * *',
        // Never two passes at once: a slow pass makes the next run skip rather than race it.
        concurrencyPolicy: 'Forbid',
        startingDeadlineSeconds: 120,
        successfulJobsHistoryLimit: 1,
        failedJobsHistoryLimit: 3,
        jobTemplate: {
          metadata: { labels },
          spec: {
            backoffLimit: 1,
            activeDeadlineSeconds: 180,
            podFailurePolicy: {
              rules: [
                // Exit 2 is a usage or configuration error, exit 3 deletions the brake held until a
                // person releases them: a retry a few seconds later cannot help either.
                { action: 'FailJob', onExitCodes: { containerName: 'ccm', operator: 'In', values: [2, 3] } },
                { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] },
              ],
            },
            template: {
              metadata: { labels },
              spec: { hostNetwork, ...rest, restartPolicy: 'Never' },
            },
          },
        },
      },
    });
  }
  if (options.metrics) objects.push(...metricsObjects(ns, options.metrics.scraper, selector));
  return objects;
}

/**
 * /metrics for a Prometheus Operator: a headless Service on the controller pods' port (hostNetwork:
 * its endpoints are the Nodes' addresses), a ServiceMonitor that scrapes it over HTTPS with the
 * scraper's own ServiceAccount token, and the one rule ccm's delegated authorisation asks the API
 * server about for that token (SubjectAccessReview of `get /metrics`, docs/run.md#metrics).
 */
function metricsObjects(
  ns: string,
  scraper: { namespace: string; name: string },
  selector: Record<string, string>,
): K8sObject[] {
  const meta = (name: string, namespace?: string) => ({
    name,
    ...(namespace ? { namespace } : {}),
    labels: { ...LABELS, 'app.kubernetes.io/component': 'metrics' },
  });
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta('ccm:metrics-reader'),
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta('ccm:metrics-reader'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ccm:metrics-reader' },
      subjects: [{ kind: 'ServiceAccount', name: scraper.name, namespace: scraper.namespace }],
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta('ccm-metrics', ns),
      spec: {
        clusterIP: 'None',
        selector,
        ports: [{ name: 'https', port: RUN_PORT, targetPort: 'https', protocol: 'TCP' }],
      },
    },
    {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: meta('ccm', ns),
      spec: {
        selector: { matchLabels: { ...LABELS, 'app.kubernetes.io/component': 'metrics' } },
        endpoints: [
          {
            port: 'https',
            scheme: 'https',
            path: '/metrics',
            // The scraper's own token, which ccm hands to the API server (TokenReview) to authenticate.
            bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
            // ccm serves a self-signed certificate unless given --tls-cert-file (docs/run.md).
            tlsConfig: { insecureSkipVerify: true },
          },
        ],
      },
    },
  ];
}

/** The workload of `ccm run` among rendered objects: a DaemonSet, or with --any-node a Deployment. */
export function controllerWorkload<T extends { kind?: string; metadata?: { name?: string } }>(
  objects: readonly T[],
): T {
  const found = objects.find(
    (o) => (o.kind === 'DaemonSet' || o.kind === 'Deployment') && o.metadata?.name === 'ccm',
  );
  if (!found) throw new Error('the manifests have no ccm DaemonSet or Deployment');
  return found;
}

/**
 * `ccm run` holds every Node in its cache: measured 246 MiB resident with 5,000 Nodes cached, idle, and
 * a 265 MiB peak while initialising them (docs/benchmarks.md). The request covers the idle figure; the
 * limit is twice it, because a relist (after 410 Gone) parses the new listing while the old cache is
 * still held. Kept above the measured figure by test/unit/templates/cronjob-resources.test.ts.
 */
export const RUN_NODE_OPTIONS = '--max-old-space-size=128 --max-semi-space-size=1';
/**
 * glibc's malloc gives each thread that contends for it an arena of its own (up to eight per core)
 * and keeps what each one freed: V8's compiler and GC threads held 8–9 MiB of them at the peak of a
 * 5,000-Node burst. With one arena `ccm run` peaked 7–9 MiB lower there, and was no slower
 * (docs/performance.md, "The Deployment's settings"). The image's Node runs on glibc.
 */
const ONE_MALLOC_ARENA = { MALLOC_ARENA_MAX: '1' };
/**
 * The controller's environment. NODE_OPTIONS: V8 otherwise keeps the heap a start-up burst grew
 * (286 MB idle with 5,000 Nodes against 140 MB, docs/benchmarks.md), and a young generation of 1 MiB
 * semi-spaces keeps the burst's garbage from the old one.
 */
export const RUN_ENV: Readonly<Record<string, string>> = {
  NODE_OPTIONS: RUN_NODE_OPTIONS,
  ...ONE_MALLOC_ARENA,
};
export const NODES_INIT_ENV: Readonly<Record<string, string>> = { ...ONE_MALLOC_ARENA };
export const RUN_RESOURCES = { requests: { cpu: '50m', memory: '256Mi' }, limits: { memory: '512Mi' } };
/**
 * `nodes init` holds a slim copy of every Node for one pass: measured peaks 107 MB at 1,000 Nodes and
 * 130 MB at 5,000 (docs/benchmarks.md). The request covers a pass over ~1,000 Nodes with a quarter to
 * spare; the limit is about twice the 5,000-Node peak (a pass killed by the OOM killer initialises
 * nothing). Raise both beyond 5,000 Nodes.
 */
const NODES_INIT_RESOURCES = { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '256Mi' } };

export function manifestsAsYaml(objects: readonly K8sObject[]): string {
  return objects.map((o) => `---\n${objectYaml(o)}`).join('');
}
