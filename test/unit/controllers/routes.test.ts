import { describe, expect, it } from 'vitest';
import {
  conditionChange,
  isResponsibleFor,
  parseClusterCIDRs,
  planRoutes,
  refusal,
} from '../../../src/controllers/routes.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';
import { InvalidConfigError } from '../../../src/providers/errors.js';
import { nextHopFor } from '../../../src/providers/next-hop.js';
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
    expect(refusal('0.0.0.0/0', parseClusterCIDRs('10.0.0.0/8'), [])).toMatch(/default route/);
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

  it('a Pod CIDR with a leading zero is refused, not read as octal', () => {
    // Review F2: 10.244.010.0/24 (10.244.10.0/24 to Go, which stored it) was routed as 10.244.8.0/24,
    // and a younger Node given 10.244.8.0/24 by node IPAM was refused.
    const early = node(1, ['10.244.010.0/24'], {
      metadata: { name: 'w1', creationTimestamp: '2024-01-01T00:00:00Z' },
    });
    const victim = node(8, ['10.244.8.0/24'], {
      metadata: { name: 'w8', creationTimestamp: '2024-06-01T00:00:00Z' },
    });
    const plan = planRoutes([early, victim], [], range);
    expect(plan.create.map((c) => `${c.node} ${c.destinationCIDR}`)).toEqual(['w8 10.244.8.0/24']);
    expect(plan.refused.map((r) => [r.node, r.why])).toEqual([
      [
        'w1',
        '10.244.010.0/24 is not a CIDR read one way only (four decimal parts without leading zeros, or IPv6)',
      ],
    ]);
    for (const cidr of ['10.244.1.0/024', '10.244.1/24', '0x0a.244.1.0/24', 'fd00:10:244:1::/129'])
      expect(refusal(cidr, range, []), cidr).toMatch(/is not a CIDR/);
    expect(() => parseClusterCIDRs('10.244.00.0/16')).toThrow(/expected CIDRs such as/);
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

    it("a Node reporting an address inside a routed Node's Pod CIDR frees no place for its own nested claim", () => {
      // Review F7: the ExternalIP made w1's routed /24 refused, a refused claim took no part in the
      // overlap contest, and the hostile /25 inside it was routed: half of w1's Pod traffic taken.
      const victim = claimant(1, '10.244.11.0/24', 1);
      const evil = node(66, ['10.244.11.128/25'], {
        metadata: { name: 'evil', ...at(2) },
        status: {
          addresses: [
            { type: 'InternalIP', address: '10.0.0.66' },
            { type: 'ExternalIP', address: '10.244.11.7' },
          ],
        },
      });
      for (const listed of [[route('10.244.11.0/24', '10.0.0.1')], []]) {
        const plan = planRoutes([victim, evil], listed, range);
        expect(plan.create.map((c) => c.node)).toEqual(listed.length ? [] : ['w1']);
        expect(refusedOf(plan)).toEqual([
          [
            'evil',
            '10.244.11.128/25 overlaps 10.244.11.0/24, the Pod CIDR of Node w1, which is routed to it',
          ],
        ]);
      }
    });

    it('a claim refused for a Node address still blocks younger claims overlapping it', () => {
      // The address is an older Node's, so w2's /24 is refused; a still younger /25 inside it must not
      // take its place (it would keep it as routed once the address went).
      const holder = node(1, [], {
        metadata: { name: 'w1', ...at(1) },
        status: { addresses: [{ type: 'InternalIP', address: '10.244.11.7' }] },
      });
      const refused = claimant(2, '10.244.11.0/24', 2);
      const nested = claimant(3, '10.244.11.128/25', 3);
      const plan = planRoutes([nested, refused, holder], [], range);
      expect(plan.create).toEqual([]);
      expect(refusedOf(plan).sort()).toEqual([
        ['w2', '10.244.11.0/24 holds the Node address 10.244.11.7 (Node w1)'],
        [
          'w3',
          '10.244.11.128/25 overlaps 10.244.11.0/24, the Pod CIDR of Node w2, which keeps its place though it is not routed now',
        ],
      ]);
    });

    it("a younger Node's addresses inside other Nodes' Pod CIDRs refuse none of them", () => {
      // Review F1: one Node without a Pod CIDR reporting an ExternalIP in each turned every routed
      // Node NoRouteCreated, a warning and an event each, every pass.
      const a = claimant(1, '10.244.1.0/24', 1);
      const b = claimant(2, '10.244.2.0/24', 2);
      const c = claimant(3, '10.244.3.0/24', 3);
      const evil = node(66, [], {
        metadata: { name: 'evil', ...at(4) },
        status: {
          addresses: [
            { type: 'InternalIP', address: '10.0.0.66' },
            { type: 'ExternalIP', address: '10.244.1.1' },
            { type: 'ExternalIP', address: '10.244.2.1' },
            { type: 'InternalIP', address: '10.244.3.1' },
          ],
        },
      });
      const routed = [route('10.244.1.0/24', '10.0.0.1'), route('10.244.2.0/24', '10.0.0.2')];
      const plan = planRoutes([a, b, c, evil], routed, range);
      expect({ complete: plan.complete, refused: plan.refused, delete: plan.delete }).toEqual({
        complete: ['w1', 'w2'],
        refused: [],
        delete: [],
      });
      expect(plan.create.map((x) => x.node)).toEqual(['w3']);
      // An older Node's address still refuses a younger claim, and a Node's own address its own.
      const older = node(9, [], {
        metadata: { name: 'w9', ...at(1) },
        status: { addresses: [{ type: 'InternalIP', address: '10.244.4.9' }] },
      });
      const own = node(5, ['10.244.5.0/24'], {
        metadata: { name: 'w5', ...at(5) },
        status: { addresses: [{ type: 'InternalIP', address: '10.244.5.5' }] },
      });
      const later = planRoutes([older, claimant(4, '10.244.4.0/24', 2), own], [], range);
      expect(refusedOf(later)).toEqual([
        ['w4', '10.244.4.0/24 holds the Node address 10.244.4.9 (Node w9)'],
        ['w5', '10.244.5.0/24 holds the Node address 10.244.5.5 (Node w5)'],
      ]);
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
      const plan = planRoutes([victim, copycat], [route('fd00:10:244:1::/64', 'fd00:56::11')], range);
      expect(plan.ambiguous).toEqual([{ address: 'fd00:56::11', nodes: ['w1', 'w2'] }]);
      expect({ create: plan.create, delete: plan.delete }).toEqual({ create: [], delete: [] });
    });

    it('a form readers disagree on (192.168.56, an octal 10.0.0.014) is no address: no route goes via it', () => {
      // iproute2 reads "192.168.56" as 192.168.56.0 and ipaddr.js as 192.168.0.56: routed via one,
      // listed via the other, no Node owned the route, and it was deleted and made again every pass;
      // nor was a Node at 192.168.56.0 ambiguous with it.
      const a = claiming(1, '192.168.56.0', '10.244.1.0/24');
      const threePart = claiming(2, '192.168.56', '10.244.2.0/24');
      const octal = claiming(3, '10.0.0.014', '10.244.3.0/24');
      const listed = [route('10.244.1.0/24', '192.168.56.0'), route('10.244.12.0/24', '10.0.0.12')];
      const plan = planRoutes([a, threePart, octal, node(12)], listed, range);
      expect({ ambiguous: plan.ambiguous, delete: plan.delete, complete: plan.complete }).toEqual({
        ambiguous: [],
        delete: [],
        complete: ['w1', 'w12'],
      });
      // Their creates reach the provider, whose nextHopFor refuses them in one line (NoRouteCreated).
      for (const c of plan.create.filter((x) => x.node !== 'w12'))
        expect(() => nextHopFor(c.target, c.destinationCIDR)).toThrow(/has no IPv4 InternalIP/);
      expect(plan.create.map((c) => c.node)).toEqual(['w2', 'w3']);
      const odd = (address: string) => ({
        name: 'n',
        providerID: '',
        addresses: [{ type: 'InternalIP' as const, address }],
      });
      expect(nextHopFor(odd('fd00:56:0:0::11'), 'fd00:10:244:1::/64')).toBe('fd00:56::11');
      expect(nextHopFor(odd('192.168.56.11'), '10.244.1.0/24')).toBe('192.168.56.11');
      for (const address of [
        '192.168.56',
        '0xc0.168.56.11',
        '192.168.056.11',
        'fe80::1%eth0',
        '::ffff:1.2.3.04',
      ])
        expect(
          () => nextHopFor(odd(address), address.includes(':') ? 'fd00::/64' : '10.244.1.0/24'),
          address,
        ).toThrow(InvalidConfigError);
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

  it('a --cluster-cidr of /0 (IPv4 or IPv6) is refused in one line: every address is no Pod range', () => {
    // Outside review 2, finding 3: 0.0.0.0/0 made Cloudlycke's `ip rule add to 0.0.0.0/0` (stored as
    // `from all`: all host traffic into ccm's table), let a hostile 1.0.0.0/8 through, and ccm no longer
    // knew its own rule.
    expect(() => parseClusterCIDRs('0.0.0.0/0')).toThrow(
      /^--cluster-cidr: "0\.0\.0\.0\/0" is every IPv4 address/,
    );
    expect(() => parseClusterCIDRs('10.244.0.0/16,::/0')).toThrow(
      /^--cluster-cidr: "::\/0" is every IPv6 address/,
    );
    expect(() => parseClusterCIDRs('0.0.0.0/0')).not.toThrow(/\n/);
    // A short prefix other than /0 is still the operator's Pod range, as upstream takes it.
    expect(parseClusterCIDRs('10.0.0.0/8,fd00::/8')).toHaveLength(2);
  });

  it('invalid --cluster-cidr is one line', () => {
    expect(() => parseClusterCIDRs('10.244.0.0/16,nope')).toThrow(
      /^--cluster-cidr: expected CIDRs such as 10\.244\.0\.0\/16, got "nope"$/,
    );
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
