/**
 * Whether the scheduler may place a pod on a Node, by the predicates that decide it for ccm's pods:
 * nodeSelector, required node affinity and NoSchedule / NoExecute taints. The rules are the
 * scheduler's own: k8s.io/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go (terms
 * ORed, expressions ANDed, an empty term matches nothing; nodeSelector labels must all be equal) and
 * k8s.io/api core/v1 toleration.go ToleratesTaint. The test control plane runs no kube-scheduler.
 */
import type {
  V1Node,
  V1NodeSelectorRequirement,
  V1PodSpec,
  V1Taint,
  V1Toleration,
} from '@kubernetes/client-node';

export function tolerates(t: V1Toleration, taint: V1Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

function matches(expression: V1NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, expression.key);
  const value = labels[expression.key];
  switch (expression.operator) {
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'In':
      return has && (expression.values ?? []).includes(value as string);
    case 'NotIn':
      return !has || !(expression.values ?? []).includes(value as string);
    default:
      throw new Error(`operator ${expression.operator} is not modelled here`);
  }
}

/** Undefined when the pod fits the Node, otherwise which predicate refuses it. */
export function whyNotSchedulable(pod: V1PodSpec, node: V1Node): string | undefined {
  const labels = node.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(pod.nodeSelector ?? {})) {
    if (labels[key] !== value) return `nodeSelector ${key}=${value}`;
  }
  const required = pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required) {
    const terms = required.nodeSelectorTerms.filter(
      (t) => (t.matchExpressions?.length ?? 0) + (t.matchFields?.length ?? 0) > 0,
    );
    if (terms.some((t) => t.matchFields?.length)) throw new Error('matchFields is not modelled here');
    if (!terms.some((t) => (t.matchExpressions ?? []).every((e) => matches(e, labels)))) {
      return 'required node affinity';
    }
  }
  for (const taint of node.spec?.taints ?? []) {
    if (taint.effect === 'PreferNoSchedule') continue;
    if (!(pod.tolerations ?? []).some((t) => tolerates(t, taint)))
      return `taint ${taint.key}:${taint.effect}`;
  }
  return undefined;
}
