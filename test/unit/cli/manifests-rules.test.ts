import { describe, expect, it } from 'vitest';
import { clusterRules } from '../../../src/cli/manifests.js';

describe('the RBAC of the route controller alone', () => {
  it('is the Node informer, the NetworkUnavailable condition, the cluster identity and its events', () => {
    expect(clusterRules(['route'])).toEqual([
      { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get'], resourceNames: ['kube-system'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
  });

  it('adds no rule to every controller together (the rule-removal test of manifests.test.ts covers *)', () => {
    const all = clusterRules(['cloud-node', 'cloud-node-lifecycle', 'service', 'route']);
    expect(all).toEqual(clusterRules(['cloud-node', 'cloud-node-lifecycle', 'service']));
  });
});
