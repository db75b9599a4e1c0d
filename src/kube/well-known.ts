/** Every label, taint, annotation and event key ccm reads or writes, in one place. */

export const TAINT_UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
export const TAINT_SHUTDOWN = 'node.cloudprovider.kubernetes.io/shutdown';
export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';
export const TAINT_CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';
/** kubeadm labels (and taints) its control-plane Nodes with this key, value empty. */
export const LABEL_CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';

/** Set by the kubelet to the Node's own name. */
export const LABEL_HOSTNAME = 'kubernetes.io/hostname';

/** Set by the kubelet from `--node-ip`: one IP or a dual-stack pair, comma-separated. */
export const ANNOTATION_PROVIDED_NODE_IP = 'alpha.kubernetes.io/provided-node-ip';

/** Each GA label with the beta label the reference controller still writes beside it. */
export const LABEL_PAIRS = {
  instanceType: { ga: 'node.kubernetes.io/instance-type', beta: 'beta.kubernetes.io/instance-type' },
  zone: { ga: 'topology.kubernetes.io/zone', beta: 'failure-domain.beta.kubernetes.io/zone' },
  region: { ga: 'topology.kubernetes.io/region', beta: 'failure-domain.beta.kubernetes.io/region' },
} as const;

/**
 * ccm's own label: a Node carrying it with value "true" is left out of lifecycle management
 * (never tainted as shut down, never deleted), whatever the cloud says.
 */
export const LABEL_EXCLUDE_FROM_LIFECYCLE = 'ccm.io/exclude-from-lifecycle';

/** Event sources of the reference controllers, so existing dashboards and alerts keep working. */
export const SOURCE_NODE_CONTROLLER = 'cloud-node-controller';
export const SOURCE_LIFECYCLE_CONTROLLER = 'cloud-node-lifecycle-controller';

export const EVENT_SYNCED = 'Synced';
export const EVENT_DELETING_NODE = 'DeletingNode';
export const EVENT_DELETING_NODE_FAILED = 'DeletingNodeFailed';
/** ccm's own: the deletion brake kept this Node (deletion-brake.ts). */
export const EVENT_NODE_DELETION_HELD = 'NodeDeletionHeld';
/**
 * On a DeletingNode Event: the hold an operator released, which allowed the deletion. Such deletions
 * count towards neither the brake's share nor its rate.
 */
export const ANNOTATION_DELETION_RELEASE = 'ccm.io/deletion-release';
/** On a NodeDeletionHeld Event: the id of the hold it tells of. */
export const ANNOTATION_DELETION_HOLD = 'ccm.io/deletion-hold';
/** On the credentials Secret: `ccm run` deletes the held Nodes whose hold has this id. */
export const ANNOTATION_ALLOW_MASS_DELETION = 'ccm.io/allow-mass-deletion';

/** Label domains a cloud's additional labels may not use. */
export const RESERVED_LABEL_DOMAINS = ['kubernetes.io', 'k8s.io'] as const;

/** Field manager recorded in managedFields for every write ccm makes. */
export const FIELD_MANAGER = 'ccm';

/** Service controller (reference: controllers/service). */
export const FINALIZER_LOAD_BALANCER_CLEANUP = 'service.kubernetes.io/load-balancer-cleanup';
/** A Node with this label is no backend of any load balancer, unless its value parses as false. */
export const LABEL_EXCLUDE_FROM_LOAD_BALANCERS = 'node.kubernetes.io/exclude-from-external-load-balancers';
/** The cluster autoscaler's taint on a Node it is about to remove: no longer a backend. */
export const TAINT_TO_BE_DELETED_BY_AUTOSCALER = 'ToBeDeletedByClusterAutoscaler';
export const SOURCE_SERVICE_CONTROLLER = 'service-controller';
export const EVENT_ENSURING_LOAD_BALANCER = 'EnsuringLoadBalancer';
export const EVENT_ENSURED_LOAD_BALANCER = 'EnsuredLoadBalancer';
export const EVENT_SYNC_LOAD_BALANCER_FAILED = 'SyncLoadBalancerFailed';
export const EVENT_DELETING_LOAD_BALANCER = 'DeletingLoadBalancer';
export const EVENT_DELETED_LOAD_BALANCER = 'DeletedLoadBalancer';
export const EVENT_DELETE_LOAD_BALANCER_FAILED = 'DeleteLoadBalancerFailed';
export const EVENT_UPDATED_LOAD_BALANCER = 'UpdatedLoadBalancer';
export const EVENT_UPDATE_LOAD_BALANCER_FAILED = 'UpdateLoadBalancerFailed';
export const EVENT_UNAVAILABLE_LOAD_BALANCER = 'UnAvailableLoadBalancer';

export const SOURCE_ROUTE_CONTROLLER = 'route_controller';
export const EVENT_FAILED_TO_CREATE_ROUTE = 'FailedToCreateRoute';
export const EVENT_FAILED_TO_DELETE_ROUTE = 'FailedToDeleteRoute';
/** ccm's own: an address several Nodes report, which no route is created or deleted for. */
export const EVENT_AMBIGUOUS_NODE_ADDRESS = 'AmbiguousNodeAddress';

/**
 * ccm's record that the load balancer with this cloud id, built by the cloud's official controller, is
 * now this Service's (written by `ccm migrate --yes`, or by `ccm run --adopt-official`): the service
 * controller updates that one in place, never builds a second.
 */
export const ANNOTATION_ADOPTED_LOAD_BALANCER = 'ccm.io/adopted-load-balancer';
/**
 * The ConfigMap (kube-system) where the deletion brake keeps the Node deletions of its window: each
 * written before its DELETE is sent (src/kube/deletion-record.ts).
 */
export const NODE_DELETIONS_CONFIGMAP = 'ccm-node-deletions';
export const NODE_DELETIONS_NAMESPACE = 'kube-system';
/** The ConfigMap (kube-system) where `ccm migrate --yes` keeps what `--rollback` restores. */
export const MIGRATION_BACKUP_CONFIGMAP = 'ccm-migrate-backup';
/**
 * k8s.io/cloud-provider options/options.go: every controller built on it (the official ones and
 * ccm) elects its leader on this Lease in kube-system unless told another name.
 */
export const DEFAULT_LEASE_NAME = 'cloud-controller-manager';
