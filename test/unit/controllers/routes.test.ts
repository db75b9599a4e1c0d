import { describe, expect, it } from 'vitest';
import {
  conditionChange,
  isResponsibleFor,
  parseClusterCIDRs,
  planRoutes,
  refusal,
} from '../../../src/controllers/routes.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';
import type { Route } from '../../../src/providers/types.js';

const node = (
  n: number,
  cidrs: string[] = [`10.244.${n}.0/24`],
  extra: Partial<SlimNode> = {},
): SlimNode => ({
  metadata: { name: `w${n}`, uid: `uid-${n}` },
  spec: cidrs.length ? { podCIDRs: cidrs } : {},
  status: { addresses: [{ type: 'InternalIP', address: `10.0.0.${n}` }] },
  ...extra,
});
const route = (cidr: string, nextHop: string): Route => ({ name: cidr, destinationCIDR: cidr, nextHop });
const range = parseClusterCIDRs('10.244.0.0/16,fd00:10:244::/56');

describe('planRoutes (upstream route_controller reconcile)', () => {
  it('creates the missing routes and keeps the present ones', () => {
    const plan = planRoutes([node(1), node(2)], [route('10.244.1.0/24', '10.0.0.1')], range);
    expect(plan.create.map((c) => [c.node, c.destinationCIDR, c.nameHint])).toEqual([
      ['w2', '10.244.2.0/24', 'uid-2'],
    ]);
    expect(plan.complete).toEqual(['w1']);
    expect(plan.delete).toEqual([]);
  });

  it('deletes routes whose Node is gone or whose CIDR no Node holds, only inside --cluster-cidr', () => {
    const gone = route('10.244.9.0/24', '10.0.0.9');
    const moved = route('10.244.1.0/24', '10.0.0.2');
    const outside = route('192.168.5.0/24', '10.0.0.77');
    const plan = planRoutes([node(1), node(2)], [gone, moved, outside], range);
    expect(plan.delete).toEqual([gone, moved]);
    expect(plan.create.map((c) => c.destinationCIDR)).toEqual(['10.244.1.0/24', '10.244.2.0/24']);
  });

  it('without --cluster-cidr deletes nothing', () => {
    const plan = planRoutes([], [route('10.244.9.0/24', '10.0.0.9')], []);
    expect(plan.delete).toEqual([]);
  });

  it('a route straddling the range counts (its first or last address inside), as upstream', () => {
    expect(isResponsibleFor('10.0.0.0/8', range)).toBe(false);
    expect(isResponsibleFor('10.244.255.0/24', range)).toBe(true);
    expect(isResponsibleFor('fd00:10:244:1::/64', range)).toBe(true);
    expect(isResponsibleFor('not a cidr', range)).toBe(false);
  });

  it('dual stack: each Pod CIDR is its own route; a Node without podCIDRs that a route targets is flagged', () => {
    const dual = node(3, ['10.244.3.0/24', 'fd00:10:244:3::/64']);
    const plan = planRoutes([dual, node(4, [])], [route('10.244.4.0/24', '10.0.0.4')], range);
    expect(plan.create.map((c) => c.destinationCIDR)).toEqual(['10.244.3.0/24', 'fd00:10:244:3::/64']);
    expect(plan.withoutCIDRs).toEqual(['w4']);
    expect(plan.delete.map((r) => r.destinationCIDR)).toEqual(['10.244.4.0/24']);
  });

  it('an address changed: the old route is deleted and a new one created', () => {
    const n1 = node(1, undefined, { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.101' }] } });
    const plan = planRoutes([n1], [route('10.244.1.0/24', '10.0.0.1')], range);
    expect(plan.delete.map((r) => r.nextHop)).toEqual(['10.0.0.1']);
    expect(plan.create.map((c) => c.destinationCIDR)).toEqual(['10.244.1.0/24']);
  });

  it('a Pod CIDR outside --cluster-cidr, a default route or one holding a Node address is refused, never created', () => {
    const hostile = [
      node(5, ['0.0.0.0/0']),
      node(6, ['10.0.0.0/25']),
      node(7, ['10.244.0.0/15']),
      node(8, ['::/0']),
      node(9, ['10.244.9.0/24', '192.168.9.0/24']),
    ];
    const plan = planRoutes(hostile, [], range);
    expect(plan.create.map((c) => c.destinationCIDR)).toEqual(['10.244.9.0/24']);
    expect(plan.complete).toEqual([]);
    expect(plan.refused.map((r) => [r.node, r.destinationCIDR])).toEqual([
      ['w5', '0.0.0.0/0'],
      ['w6', '10.0.0.0/25'],
      ['w7', '10.244.0.0/15'],
      ['w8', '::/0'],
      ['w9', '192.168.9.0/24'],
    ]);
    expect(refusal('0.0.0.0/0', parseClusterCIDRs('0.0.0.0/0'), [])).toMatch(/default route/);
    expect(refusal('10.244.1.0/24', range, ['10.244.1.9'])).toMatch(/holds the Node address 10\.244\.1\.9/);
    expect(refusal('10.245.1.0/24', range, [])).toMatch(/outside --cluster-cidr/);
    expect(refusal('10.244.1.0/24', range, ['10.0.0.1'])).toBeUndefined();
    expect(refusal('10.244.1.0/24', range, ['nope', 'fd00::1', '10.244.2.0', '10.244.1.255'])).toMatch(
      /holds the Node address 10\.244\.1\.255/,
    );
    expect(refusal('fd00:10:244:1::/64', range, ['10.244.1.1', 'fd00:10:244:1::9'])).toMatch(
      /fd00:10:244:1::9/,
    );
    expect(refusal('fd00:10:244:1::/64', range, ['fd00:10:244:2::1', '10.244.1.1'])).toBeUndefined();
  });

  it('a Pod CIDR two Nodes claim is routed to one: the Node it already goes to, else the oldest', () => {
    const a = node(1, ['10.244.1.0/24'], {
      metadata: { name: 'w1', creationTimestamp: '2026-01-02T00:00:00Z' },
    });
    const b = node(2, ['10.244.1.0/24'], {
      metadata: { name: 'w2', creationTimestamp: '2026-01-01T00:00:00Z' },
    });
    const fresh = planRoutes([a, b], [], range);
    expect(fresh.create.map((c) => c.node)).toEqual(['w2']);
    expect(fresh.refused.map((r) => [r.node, r.why])).toEqual([
      ['w1', '10.244.1.0/24 is also the Pod CIDR of Node w2, which it is routed to'],
    ]);
    const routed = planRoutes([a, b], [route('10.244.1.0/24', '10.0.0.1')], range);
    expect(routed.create).toEqual([]);
    expect(routed.delete).toEqual([]);
    expect(routed.complete).toEqual(['w1']);
    expect(routed.refused.map((r) => r.node)).toEqual(['w2']);
  });

  describe('overlapping Pod CIDRs (one inside another, either way): routed for one Node only', () => {
    const at = (day: number) => ({ creationTimestamp: `2026-01-0${day}T00:00:00Z` });
    const claimant = (n: number, cidr: string, day: number) =>
      node(n, [cidr], { metadata: { name: `w${n}`, uid: `uid-${n}`, ...at(day) } });
    const refusedOf = (plan: ReturnType<typeof planRoutes>) => plan.refused.map((r) => [r.node, r.why]);

    it("a younger Node claiming half of an older Node's Pod CIDR is refused; the older is routed", () => {
      const victim = claimant(1, '10.244.1.0/24', 1);
      const nested = claimant(2, '10.244.1.128/25', 2);
      const plan = planRoutes([nested, victim], [], range);
      expect(plan.create.map((c) => [c.node, c.destinationCIDR])).toEqual([['w1', '10.244.1.0/24']]);
      expect(refusedOf(plan)).toEqual([
        ['w2', '10.244.1.128/25 overlaps 10.244.1.0/24, the Pod CIDR of Node w1, which is routed to it'],
      ]);
    });

    it("a younger Node claiming a CIDR that holds an older Node's is refused the same way", () => {
      const older = claimant(1, '10.244.1.0/24', 1);
      const wide = claimant(2, '10.244.0.0/20', 2);
      const plan = planRoutes([older, wide], [route('10.244.1.0/24', '10.0.0.1')], range);
      expect(plan.complete).toEqual(['w1']);
      expect(plan.create).toEqual([]);
      expect(refusedOf(plan)).toEqual([
        ['w2', '10.244.0.0/20 overlaps 10.244.1.0/24, the Pod CIDR of Node w1, which is routed to it'],
      ]);
    });

    it('the Node a route already goes to keeps it, even a younger one; nothing is deleted', () => {
      const older = claimant(1, '10.244.1.0/24', 1);
      const routed = claimant(2, '10.244.1.128/25', 2);
      const plan = planRoutes([older, routed], [route('10.244.1.128/25', '10.0.0.2')], range);
      expect({ complete: plan.complete, create: plan.create, delete: plan.delete }).toEqual({
        complete: ['w2'],
        create: [],
        delete: [],
      });
      expect(refusedOf(plan).map(([n]) => n)).toEqual(['w1']);
    });

    it("both already routed (a ccm before this check): the older keeps its route, the younger's is deleted", () => {
      const older = claimant(1, '10.244.1.0/24', 1);
      const nested = claimant(2, '10.244.1.128/25', 2);
      const stolen = route('10.244.1.128/25', '10.0.0.2');
      const plan = planRoutes([older, nested], [route('10.244.1.0/24', '10.0.0.1'), stolen], range);
      expect({ complete: plan.complete, delete: plan.delete, create: plan.create }).toEqual({
        complete: ['w1'],
        delete: [stolen],
        create: [],
      });
    });

    it('a refused claim does not block a third Node whose CIDR overlaps only it', () => {
      const a = claimant(1, '10.244.1.0/25', 1);
      const b = claimant(2, '10.244.1.0/24', 2);
      const c = claimant(3, '10.244.1.128/25', 3);
      const plan = planRoutes([c, b, a], [], range);
      expect(plan.create.map((x) => x.node).sort()).toEqual(['w1', 'w3']);
      expect(refusedOf(plan).map(([n]) => n)).toEqual(['w2']);
    });

    it('IPv6 too, and disjoint neighbours are not overlaps', () => {
      const v6 = parseClusterCIDRs('fd00:10:244::/56');
      const a = claimant(1, 'fd00:10:244:1::/64', 1);
      const nested = claimant(2, 'fd00:10:244:1:8000::/65', 2);
      const neighbour = claimant(3, 'fd00:10:244:2::/64', 3);
      const plan = planRoutes([a, nested, neighbour], [], v6);
      expect(plan.create.map((x) => x.node)).toEqual(['w1', 'w3']);
      expect(refusedOf(plan).map(([n]) => n)).toEqual(['w2']);
    });

    it('5,000 Nodes plan in a few seconds at most (checking each address against each Pod CIDR took 23 s)', () => {
      const many = Array.from({ length: 5000 }, (_, i) =>
        node(i, [`10.${100 + (i >> 8)}.${i & 255}.0/24`], {
          status: { addresses: [{ type: 'InternalIP', address: `192.168.${i >> 8}.${i & 255}` }] },
        }),
      );
      const started = performance.now();
      const plan = planRoutes(many, [], parseClusterCIDRs('10.0.0.0/8'));
      expect({ created: plan.create.length, refused: plan.refused.length }).toEqual({
        created: 5000,
        refused: 0,
      });
      expect(performance.now() - started).toBeLessThan(3000);
    });
  });

  describe('an address two Nodes report is ambiguous', () => {
    const claiming = (n: number, address: string, cidr: string) =>
      node(n, [cidr], { status: { addresses: [{ type: 'InternalIP', address }] } });

    it('a route via it is neither counted nor deleted, and neither Node gets a route on its account', () => {
      const victim = claiming(1, '10.0.0.1', '10.244.1.0/24');
      const copycat = claiming(2, '10.0.0.1', '10.244.2.0/24');
      const routed = route('10.244.1.0/24', '10.0.0.1');
      for (const nodes of [
        [victim, copycat],
        [copycat, victim],
      ]) {
        const plan = planRoutes(nodes, [routed], range);
        expect({
          delete: plan.delete,
          create: plan.create,
          complete: plan.complete,
          refused: plan.refused,
          ambiguous: plan.ambiguous,
        }).toEqual({
          delete: [],
          create: [],
          complete: [],
          refused: [],
          ambiguous: [{ address: '10.0.0.1', nodes: ['w1', 'w2'] }],
        });
      }
    });

    it("a copycat does not hand an older Node overlapping the victim's routed Pod CIDR the win", () => {
      const at = (day: number) => ({ creationTimestamp: `2026-01-0${day}T00:00:00Z` });
      const older = node(1, ['10.244.2.128/25'], {
        metadata: { name: 'w1', ...at(1) },
        status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
      });
      const victim = node(2, ['10.244.2.0/24'], {
        metadata: { name: 'w2', ...at(2) },
        status: { addresses: [{ type: 'InternalIP', address: '10.0.0.2' }] },
      });
      const copycat = node(3, ['10.244.3.0/24'], {
        metadata: { name: 'w3', ...at(3) },
        status: { addresses: [{ type: 'InternalIP', address: '10.0.0.2' }] },
      });
      const plan = planRoutes([older, victim, copycat], [route('10.244.2.0/24', '10.0.0.2')], range);
      expect(plan.create).toEqual([]);
      expect(plan.refused.map((r) => r.node)).toEqual(['w1']);
    });

    it('another spelling of the same address is the same address', () => {
      const victim = node(1, ['fd00:10:244:1::/64'], {
        status: { addresses: [{ type: 'InternalIP', address: 'fd00:56::11' }] },
      });
      const copycat = node(2, ['fd00:10:244:2::/64'], {
        status: { addresses: [{ type: 'InternalIP', address: 'fd00:56:0:0::11' }] },
      });
      const octal = claiming(3, '10.0.0.014', '10.244.3.0/24');
      const plan = planRoutes(
        [victim, copycat, octal, node(12)],
        [route('10.244.12.0/24', '10.0.0.12')],
        range,
      );
      expect(plan.ambiguous).toEqual([
        { address: 'fd00:56::11', nodes: ['w1', 'w2'] },
        { address: '10.0.0.12', nodes: ['w12', 'w3'] },
      ]);
      expect({ create: plan.create, delete: plan.delete }).toEqual({ create: [], delete: [] });
    });

    it('an ExternalIP two Nodes share (one NAT address) is no next hop: both are routed as ever', () => {
      const natted = (n: number) =>
        node(n, undefined, {
          status: {
            addresses: [
              { type: 'InternalIP', address: `10.0.0.${n}` },
              { type: 'ExternalIP', address: '203.0.113.1' },
            ],
          },
        });
      const plan = planRoutes([natted(1), natted(2)], [route('10.244.9.0/24', '203.0.113.1')], range);
      expect(plan.create.map((c) => c.node)).toEqual(['w1', 'w2']);
      expect({ ambiguous: plan.ambiguous, delete: plan.delete }).toEqual({ ambiguous: [], delete: [] });
    });

    it('other Nodes are planned as ever, and a route via an ambiguous address outside --cluster-cidr is still not ours to delete', () => {
      const plan = planRoutes(
        [claiming(1, '10.0.0.1', '10.244.1.0/24'), claiming(2, '10.0.0.1', '10.244.2.0/24'), node(3)],
        [route('10.244.9.0/24', '10.0.0.1'), route('10.244.8.0/24', '10.0.0.8')],
        range,
      );
      expect(plan.create.map((c) => c.node)).toEqual(['w3']);
      expect(plan.delete.map((r) => r.destinationCIDR)).toEqual(['10.244.8.0/24']);
    });
  });

  it('--cluster-cidr as upstream validates it: two CIDRs of one family, or three, are refused in one line', () => {
    expect(() => parseClusterCIDRs('10.244.0.0/16,10.245.0.0/16')).toThrow();
    expect(() => parseClusterCIDRs('10.244.0.0/16,fd00:10:244::/56,10.96.0.0/12')).toThrow();
    expect(() => parseClusterCIDRs('10.244.0.0/16,10.245.0.0/16')).toThrow(/two IPv4 CIDRs given/);
    expect(() => parseClusterCIDRs('10.244.0.0/16,fd00:10:244::/56,10.96.0.0/12')).toThrow(/at most 2/);
    expect(parseClusterCIDRs('fd00:10:244::/56, 10.244.0.0/16')).toHaveLength(2);
  });

  it('invalid --cluster-cidr is one line', () => {
    expect(() => parseClusterCIDRs('10.244.0.0/16,nope')).toThrow(/--cluster-cidr: "nope" is not a CIDR/);
  });
});

describe('conditionChange', () => {
  it('is written only when status or reason differ', () => {
    const n = node(1);
    expect(conditionChange(n, true)).toMatchObject({ status: 'False', reason: 'RouteCreated' });
    const done: SlimNode = {
      ...n,
      status: { conditions: [{ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }] },
    };
    expect(conditionChange(done, true)).toBeUndefined();
    expect(conditionChange(done, false)).toMatchObject({ status: 'True', reason: 'NoRouteCreated' });
  });
});
