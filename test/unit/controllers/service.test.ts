import { describe, expect, it } from 'vitest';
import {
  type BackendCandidate,
  backendNodes,
  describeRequest,
  isBackend,
  loadBalancerName,
  needsCleanup,
  needsSync,
  nodeChangeMatters,
  sameIngress,
  wantsLoadBalancer,
  whyNoBackends,
} from '../../../src/controllers/service.js';
import { type SlimService, slimService } from '../../../src/kube/services.js';

const rules = { clusterID: 'c-1' };

function svc(over: Partial<SlimService> = {}): SlimService {
  return {
    ...slimService({
      metadata: { namespace: 'ns', name: 'web', uid: '1234-5678', resourceVersion: '7' },
      spec: { type: 'LoadBalancer', ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] },
    }),
    ...over,
  };
}

function node(over: Partial<BackendCandidate> = {}): BackendCandidate {
  return {
    name: 'n1',
    providerID: 'cloudlycke://n1',
    labels: {},
    taintKeys: [],
    deleting: false,
    addresses: [],
    ...over,
  };
}

describe('which Services are ours', () => {
  it('type LoadBalancer without a class, or with the class we own', () => {
    expect(wantsLoadBalancer(svc(), rules)).toBe(true);
    expect(wantsLoadBalancer(svc({ type: 'ClusterIP' }), rules)).toBe(false);
    expect(wantsLoadBalancer(svc({ loadBalancerClass: 'other.io/lb' }), rules)).toBe(false);
    expect(
      wantsLoadBalancer(svc({ loadBalancerClass: 'ours.io/lb' }), {
        ...rules,
        loadBalancerClass: 'ours.io/lb',
      }),
    ).toBe(true);
  });

  it('cleanup only where our finalizer is and the Service goes or changed type', () => {
    const fin = ['service.kubernetes.io/load-balancer-cleanup'];
    expect(needsCleanup(svc({ finalizers: fin, deleting: true }), rules)).toBe(true);
    expect(needsCleanup(svc({ finalizers: fin, type: 'ClusterIP' }), rules)).toBe(true);
    expect(needsCleanup(svc({ finalizers: fin }), rules)).toBe(false);
    expect(needsCleanup(svc({ deleting: true }), rules)).toBe(false);
  });
});

describe('backend Nodes', () => {
  it.each([
    [
      'excluded by label',
      { labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': '' } },
      false,
    ],
    [
      'excluded label that parses as false',
      { labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'false' } },
      true,
    ],
    ['being deleted', { deleting: true }, false],
    ['without provider ID', { providerID: '' }, false],
    ['tainted by the autoscaler', { taintKeys: ['ToBeDeletedByClusterAutoscaler'] }, false],
    ['NotReady (readiness is not used)', {}, true],
  ])('%s', (_what, over, expected) => {
    expect(isBackend(node(over as Partial<BackendCandidate>))).toBe(expected);
  });

  it('why none is a backend: the Nodes each rule left out, in one line', () => {
    const excluded = { 'node.kubernetes.io/exclude-from-external-load-balancers': '' };
    expect(whyNoBackends([node({ name: 'cp-1', labels: excluded })])).toBe(
      '1 Node(s) labelled node.kubernetes.io/exclude-from-external-load-balancers (kubeadm labels control-plane Nodes so): cp-1',
    );
    expect(
      whyNoBackends([
        node({ name: 'cp-1', labels: excluded }),
        node({ name: 'w1', providerID: '' }),
        node({ name: 'w2', providerID: '' }),
        node({ name: 'w3', deleting: true }),
      ]),
    ).toBe(
      '1 Node(s) labelled node.kubernetes.io/exclude-from-external-load-balancers (kubeadm labels control-plane Nodes so): cp-1; 2 Node(s) without a provider ID (not initialised yet): w1, w2; 1 Node(s) being deleted: w3',
    );
    expect(whyNoBackends([])).toBe('the cluster has no Nodes');
  });

  it('sorted by name, only backends', () => {
    const set = backendNodes([node({ name: 'b' }), node({ name: 'a' }), node({ name: 'c', deleting: true })]);
    expect(set.map((n) => n.name)).toEqual(['a', 'b']);
  });

  it('a Node change matters only when it changes membership or the provider ID', () => {
    expect(nodeChangeMatters(node(), node({ labels: { x: 'y' } }))).toBe(false);
    expect(nodeChangeMatters(node(), node({ taintKeys: ['ToBeDeletedByClusterAutoscaler'] }))).toBe(true);
    expect(nodeChangeMatters(undefined, node())).toBe(true);
    expect(nodeChangeMatters(node(), undefined)).toBe(true);
  });

  it("a backend's addresses matter (they are written just after the provider ID); a non-backend's do not", () => {
    const internal = [{ type: 'InternalIP' as const, address: '10.0.0.13' }];
    expect(nodeChangeMatters(node({ addresses: [] }), node({ addresses: internal }))).toBe(true);
    expect(nodeChangeMatters(node({ addresses: internal }), node({ addresses: [...internal] }))).toBe(false);
    expect(
      nodeChangeMatters(
        node({ providerID: '', addresses: [] }),
        node({ providerID: '', addresses: internal }),
      ),
    ).toBe(false);
  });
});

describe('when the cloud is asked again', () => {
  it('not for our own writes: status, finalizers, resourceVersion', () => {
    const old = svc();
    expect(
      needsSync(
        old,
        { ...old, resourceVersion: '8', finalizers: ['x'], ingress: [{ ip: '1.2.3.4' }] },
        rules,
      ),
    ).toBe(false);
  });
  it.each([
    ['ports', { ports: [] }],
    ['annotations', { annotations: { a: 'b' } }],
    ['loadBalancerIP', { loadBalancerIP: '1.2.3.4' }],
    ['source ranges', { loadBalancerSourceRanges: ['10.0.0.0/8'] }],
    ['traffic policy', { externalTrafficPolicy: 'Local' as const }],
    ['type', { type: 'ClusterIP' }],
    ['deletion', { deleting: true }],
  ])('on a change of %s', (_what, over) => {
    expect(needsSync(svc(), { ...svc(), ...over } as SlimService, rules)).toBe(true);
  });
  it('never for Services that are not ours', () => {
    const other = svc({ type: 'ClusterIP' });
    expect(needsSync(other, { ...other, ports: [] }, rules)).toBe(false);
  });
});

describe('the request a provider sees', () => {
  it('names the load balancer as the reference does and carries the cluster identity', () => {
    expect(loadBalancerName('6c7e1ae4-7e0f-4b8a-9a56-2c7e1ae47e0f')).toBe('a6c7e1ae47e0f4b8a9a562c7e1ae47e0');
    const req = describeRequest(svc(), [], rules);
    expect(req.clusterID).toBe('c-1');
    expect(req.ports).toEqual([{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }]);
  });
  it('ingress compares as a set', () => {
    expect(sameIngress([{ ip: 'a' }, { hostname: 'h' }], [{ hostname: 'h' }, { ip: 'a' }])).toBe(true);
    expect(sameIngress([{ ip: 'a' }], [{ ip: 'a', ipMode: 'Proxy' }])).toBe(false);
  });
});
