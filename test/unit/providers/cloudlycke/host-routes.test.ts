/**
 * HostRoutes against a stand-in for `ip` that answers as iproute2 6.1 does: rules printed with the
 * table's name where rt_tables has one, `rule show table X` filtering by the resolved id, and
 * "File exists" for a rule the kernel already has. Each call takes a tick, so calls interleave as
 * the route pass's concurrent creates do. The real `ip` in a network namespace is the integration
 * test's (test/integration/route-controller-cloudlycke*.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { HostRoutes, realmOf } from '../../../../src/providers/cloudlycke/routes.js';
import { InvalidConfigError } from '../../../../src/providers/errors.js';
import type { RouteTarget } from '../../../../src/providers/types.js';

const RT_TABLES: Record<string, number> = { main: 254, default: 253, local: 255, ccmpods: 100 };
const nameOf = (id: number) => Object.entries(RT_TABLES).find(([, n]) => n === id)?.[0] ?? String(id);

class FakeIp {
  readonly calls: string[][] = [];
  /** Rules as the kernel holds them: table id, priority and selectors, per family flag. */
  readonly rules: { family: string; table: number; priority: number; from?: string; to?: string }[] = [
    { family: '-4', table: 255, priority: 0 },
    { family: '-4', table: 254, priority: 32766 },
    { family: '-4', table: 253, priority: 32767 },
  ];
  /** Called before `rule add` looks at the rules: another process's change can land there. */
  beforeRuleAdd?: () => void;

  private id(table: string): number {
    if (/^\d+$/.test(table)) return Number(table);
    const id = RT_TABLES[table];
    if (id === undefined) throw new Error(`Error: argument "${table}" is wrong: table id value is invalid`);
    return id;
  }

  run = async (args: string[]): Promise<string> => {
    this.calls.push(args);
    await new Promise((r) => setTimeout(r, 1));
    const [family = '', ...all] = args;
    const numeric = all.includes('-N');
    const rest = all.filter((a) => a !== '-N');
    const text = rest.join(' ');
    if (text.startsWith('-json rule show')) {
      const filter = rest[3] === 'table' ? this.id(rest[4] as string) : undefined;
      const prefix = (cidr: string | undefined, key: string) =>
        cidr ? { [key]: cidr.split('/')[0], [`${key}len`]: Number(cidr.split('/')[1]) } : {};
      return JSON.stringify(
        this.rules
          // As iproute2: table 0 (unspec) filters nothing.
          .filter((r) => r.family === family && (!filter || r.table === filter))
          .map((r) => ({
            priority: r.priority,
            ...(r.from ? prefix(r.from, 'src') : { src: 'all' }),
            ...prefix(r.to, 'dst'),
            table: numeric ? String(r.table) : nameOf(r.table),
          })),
      );
    }
    if (text.startsWith('rule add')) {
      const word = (w: string) => (rest.includes(w) ? rest[rest.indexOf(w) + 1] : undefined);
      const to = word('to');
      const from = word('from');
      const rule = {
        family,
        table: this.id(word('lookup') as string),
        priority: Number(word('priority')),
        ...(to ? { to } : {}),
        ...(from ? { from } : {}),
      };
      this.beforeRuleAdd?.();
      // The kernel compares only the selectors the new rule sets (fib4_rule_compare).
      if (
        this.rules.some(
          (r) =>
            r.family === family &&
            r.table === rule.table &&
            r.priority === rule.priority &&
            (!to || r.to === to) &&
            (!from || r.from === from),
        )
      )
        throw new Error('RTNETLINK answers: File exists');
      this.rules.push(rule);
      return '';
    }
    if (text.startsWith('-json route show')) {
      this.id(rest[4] as string);
      return '[]';
    }
    if (text.startsWith('route replace')) return '';
    throw new Error(`unexpected ip ${args.join(' ')}`);
  };

  ruleAdds(): number {
    return this.calls.filter((a) => a[1] === 'rule' && a[2] === 'add').length;
  }
  rulesOf(table: number): number {
    return this.rules.filter((r) => r.table === table).length;
  }
}

const target = (n: number): RouteTarget => ({
  name: `vm${n}`,
  providerID: `cloudlycke://vm${n}`,
  addresses: [{ type: 'InternalIP', address: `192.168.56.${n}` }],
});
const createAll = (routes: HostRoutes, count: number) =>
  Promise.allSettled(
    Array.from({ length: count }, (_, i) =>
      routes.create('lab', `uid-${i + 1}`, {
        targetNode: target(i + 1),
        destinationCIDR: `10.244.${i + 1}.0/24`,
        clusterCIDR: '10.244.0.0/16',
      }),
    ),
  );
const failures = (results: PromiseSettledResult<void>[]) =>
  results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).message)] : []));

describe("HostRoutes: the ip rule that looks up a table of ccm's", () => {
  it('ten creates at once on a table without its rule: all succeed, one `ip rule add`, one rule', async () => {
    const ip = new FakeIp();
    const results = await createAll(new HostRoutes('100', ip.run), 10);
    expect({ failures: failures(results), ruleAdds: ip.ruleAdds(), rules: ip.rulesOf(100) }).toEqual({
      failures: [],
      ruleAdds: 1,
      rules: 1,
    });
  });

  it('the identical rule added by another process between the check and the add ("File exists") is success', async () => {
    const ip = new FakeIp();
    ip.beforeRuleAdd = () => {
      if (ip.rulesOf(100) === 0)
        ip.rules.push({ family: '-4', table: 100, priority: 32765, to: '10.244.0.0/16' });
    };
    const results = await createAll(new HostRoutes('100', ip.run), 1);
    expect({ failures: failures(results), rules: ip.rulesOf(100) }).toEqual({ failures: [], rules: 1 });
  });

  it('a table given by number whose rule iproute2 prints by name is found: no second rule', async () => {
    const ip = new FakeIp();
    ip.rules.push({ family: '-4', table: 100, priority: 32765, to: '10.244.0.0/16' });
    const routes = new HostRoutes('100', ip.run);
    const results = await createAll(routes, 3);
    const listed = await routes.list('lab');
    expect({
      failures: failures(results),
      ruleAdds: ip.ruleAdds(),
      incomplete: listed.filter((r) => r.incomplete),
    }).toEqual({ failures: [], ruleAdds: 0, incomplete: [] });
  });

  it('a table given by name whose rule was added by number is found the same way', async () => {
    const ip = new FakeIp();
    const results = await createAll(new HostRoutes('ccmpods', ip.run), 3);
    expect({ failures: failures(results), ruleAdds: ip.ruleAdds(), rules: ip.rulesOf(100) }).toEqual({
      failures: [],
      ruleAdds: 1,
      rules: 1,
    });
  });

  it("a rule for some packets only, or one after main's, does not count: ccm adds its own", async () => {
    const ip = new FakeIp();
    ip.rules.push({ family: '-4', table: 100, priority: 100, from: '10.0.0.0/8' });
    ip.rules.push({ family: '-4', table: 100, priority: 40000 });
    const results = await createAll(new HostRoutes('100', ip.run), 2);
    expect({ failures: failures(results), ruleAdds: ip.ruleAdds(), rules: ip.rulesOf(100) }).toEqual({
      failures: [],
      ruleAdds: 1,
      rules: 3,
    });
  });

  it('the rule sends only Pod traffic to the table: `to <cluster CIDR>`, per family, not every packet', async () => {
    // Review F5: `from all lookup 200` put a table another program uses (a VPN's default route,
    // reached by its fwmark rule) in front of all the host's traffic.
    const ip = new FakeIp();
    const routes = new HostRoutes('100', ip.run);
    const dual: RouteTarget = {
      ...target(1),
      addresses: [...target(1).addresses, { type: 'InternalIP', address: 'fd00:56::1' }],
    };
    await routes.create('lab', 'uid-1', {
      targetNode: dual,
      destinationCIDR: '10.244.1.0/24',
      clusterCIDR: '10.244.0.0/16',
    });
    await routes.create('lab', 'uid-1', {
      targetNode: dual,
      destinationCIDR: 'fd00:10:244:1::/64',
      clusterCIDR: 'fd00:10:244::/56',
    });
    expect(ip.calls.filter((a) => a[1] === 'rule' && a[2] === 'add').map((a) => a.join(' '))).toEqual([
      '-4 rule add to 10.244.0.0/16 lookup 100 priority 32765',
      '-6 rule add to fd00:10:244::/56 lookup 100 priority 32765',
    ]);
  });

  it("a broad rule (an earlier ccm's `from all lookup 100`) is not ccm's rule: ccm adds its own beside it", async () => {
    const ip = new FakeIp();
    ip.rules.push({ family: '-4', table: 100, priority: 32765 });
    const results = await createAll(new HostRoutes('100', ip.run), 2);
    expect({ failures: failures(results), ruleAdds: ip.ruleAdds(), rules: ip.rulesOf(100) }).toEqual({
      failures: [],
      ruleAdds: 1,
      rules: 2,
    });
  });

  it('"File exists" for a rule with one more selector at that priority: a configuration error naming it', async () => {
    const ip = new FakeIp();
    ip.rules.push({ family: '-4', table: 100, priority: 32765, to: '10.244.0.0/16', from: '192.168.0.0/16' });
    const results = await createAll(new HostRoutes('100', ip.run), 1);
    expect(results[0]).toMatchObject({ status: 'rejected', reason: expect.any(InvalidConfigError) });
    expect(failures(results)[0]).toMatch(/File exists, yet no rule "to 10.244.0.0\/16 lookup 100"/);
  });

  it('routes the rule does not cover are listed as incomplete (made again), those it covers as done', async () => {
    const ip = new FakeIp();
    ip.rules.push({ family: '-4', table: 100, priority: 32765, to: '10.244.0.0/16' });
    const realm = String(realmOf('lab'));
    const listing = ['10.244.1.0/24', '10.245.1.0/24'].map((dst) => ({
      dst,
      gateway: '192.168.56.1',
      flow: { to: realm },
    }));
    const run = async (args: string[]) =>
      args.includes('route') && args.includes('show')
        ? JSON.stringify(args[0] === '-4' ? listing : [])
        : ip.run(args);
    const listed = await new HostRoutes('100', run).list('lab');
    expect(listed.map((r) => [r.destinationCIDR, !!r.incomplete])).toEqual([
      ['10.244.1.0/24', false],
      ['10.245.1.0/24', true],
    ]);
  });

  it("main is looked up by the kernel's own rule: no rule is read or added", async () => {
    for (const table of ['254', 'main']) {
      const ip = new FakeIp();
      const results = await createAll(new HostRoutes(table, ip.run), 2);
      expect({
        table,
        failures: failures(results),
        ruleCalls: ip.calls.filter((a) => a.includes('rule')),
      }).toEqual({ table, failures: [], ruleCalls: [] });
    }
  });

  it('a name iproute2 resolves to a reserved table (0, 253, 255) is refused in one line', async () => {
    for (const [name, id] of [
      ['mydefault', 253],
      ['mylocal', 255],
      ['nothing', 0],
    ] as const) {
      RT_TABLES[name] = id;
      try {
        const ip = new FakeIp();
        const results = await createAll(new HostRoutes(name, ip.run), 1);
        expect(results[0], name).toMatchObject({
          status: 'rejected',
          reason: expect.any(InvalidConfigError),
        });
        expect(failures(results)[0], name).toMatch(new RegExp(`iproute2 reads "${name}" as table (253|255)`));
        expect(
          ip.calls.filter((a) => a.includes('replace')),
          name,
        ).toEqual([]);
      } finally {
        delete RT_TABLES[name];
      }
    }
  });

  it('a name iproute2 does not know is a configuration error naming the table', async () => {
    const ip = new FakeIp();
    const results = await createAll(new HostRoutes('nosuch', ip.run), 1);
    expect(results[0]).toMatchObject({ status: 'rejected', reason: expect.any(InvalidConfigError) });
    expect(failures(results)[0]).toMatch(/iproute2 knows no table named "nosuch"/);
  });

  it('refuses the local table by name or number, 0, a leading zero (octal to iproute2) and a number past 32 bits', () => {
    for (const table of ['local', '255', '0', '0254', '4294967296', 'not a table'])
      expect(() => new HostRoutes(table, async () => ''), table).toThrow(InvalidConfigError);
    expect(() => new HostRoutes('4294967295', async () => '')).not.toThrow();
  });

  it('refuses default (253), looked up only after main, and unspec and all, which are no table', () => {
    // Review F4: routes in table default, Nodes RouteCreated, but main's default route took every
    // packet first. F6: unspec (0) was accepted though 0 was not; its routes landed in main.
    for (const table of ['default', '253', 'unspec', 'all'])
      expect(() => new HostRoutes(table, async () => ''), table).toThrow(InvalidConfigError);
    expect(() => new HostRoutes('default', async () => '')).toThrow(/looked up after main/);
    expect(() => new HostRoutes('unspec', async () => '')).toThrow(/0 \(unspec\) is no table/);
  });
});
