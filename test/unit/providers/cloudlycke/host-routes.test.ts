/**
 * HostRoutes against a stand-in for `ip` that answers as iproute2 6.1 does: rules printed with the
 * table's name where rt_tables has one, `rule show table X` filtering by the resolved id, and
 * "File exists" for a rule the kernel already has. Each call takes a tick, so calls interleave as
 * the route pass's concurrent creates do. The real `ip` in a network namespace is the integration
 * test's (test/integration/route-controller-cloudlycke*.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { HostRoutes } from '../../../../src/providers/cloudlycke/routes.js';
import { InvalidConfigError } from '../../../../src/providers/errors.js';
import type { RouteTarget } from '../../../../src/providers/types.js';

const RT_TABLES: Record<string, number> = { main: 254, default: 253, local: 255, ccmpods: 100 };
const nameOf = (id: number) => Object.entries(RT_TABLES).find(([, n]) => n === id)?.[0] ?? String(id);

class FakeIp {
  readonly calls: string[][] = [];
  /** Rules as the kernel holds them: table id and priority, per family flag. */
  readonly rules: { family: string; table: number; priority: number; from?: string }[] = [
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
    const [family = '', ...rest] = args;
    const text = rest.join(' ');
    if (text.startsWith('-json rule show')) {
      const filter = rest[3] === 'table' ? this.id(rest[4] as string) : undefined;
      return JSON.stringify(
        this.rules
          .filter((r) => r.family === family && (filter === undefined || r.table === filter))
          .map((r) => ({
            priority: r.priority,
            ...(r.from
              ? { src: r.from.split('/')[0], srclen: Number(r.from.split('/')[1]) }
              : { src: 'all' }),
            table: nameOf(r.table),
          })),
      );
    }
    if (text.startsWith('rule add')) {
      const rule = { family, table: this.id(rest[3] as string), priority: Number(rest[5]) };
      this.beforeRuleAdd?.();
      if (
        this.rules.some((r) => r.family === family && r.table === rule.table && r.priority === rule.priority)
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
      if (ip.rulesOf(100) === 0) ip.rules.push({ family: '-4', table: 100, priority: 32765 });
    };
    const results = await createAll(new HostRoutes('100', ip.run), 1);
    expect({ failures: failures(results), rules: ip.rulesOf(100) }).toEqual({ failures: [], rules: 1 });
  });

  it('a table given by number whose rule iproute2 prints by name is found: no second rule', async () => {
    const ip = new FakeIp();
    ip.rules.push({ family: '-4', table: 100, priority: 32765 });
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

  it("254 and 253 are main and default, looked up by the kernel's own rules: no rule is read or added", async () => {
    for (const table of ['254', '253', 'main', 'default']) {
      const ip = new FakeIp();
      const results = await createAll(new HostRoutes(table, ip.run), 2);
      expect({
        table,
        failures: failures(results),
        ruleCalls: ip.calls.filter((a) => a[1] === 'rule' || a[2] === 'rule'),
      }).toEqual({ table, failures: [], ruleCalls: [] });
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
});
