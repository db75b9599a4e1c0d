import { describe, expect, it } from 'vitest';
import { flagValue, planMigration } from '../../../src/cli/migrate.js';
import { migrateReport } from '../../../src/cli/migrate-report.js';
import type { View } from '../../../src/cli/output/flags.js';
import { render, type Terminal } from '../../../src/cli/output/render.js';
import { slimService } from '../../../src/kube/services.js';
import type {
  ForeignLoadBalancer,
  LoadBalancerAdoption,
  OfficialController,
} from '../../../src/providers/types.js';
import { pipe } from './pipe.js';

const official: OfficialController = {
  id: 'official-ccm',
  description: 'test',
  workloads: ['official-ccm'],
  images: [],
  leases: ['cloud-controller-manager'],
  leaderElectOffByDefault: false,
  secrets: ['creds'],
  configMaps: [],
  secretCompatible: true,
  serviceAnnotations: ['official/load-balancer-id'],
};

function service(
  name: string,
  extra: { annotations?: Record<string, string>; ip?: string; hostname?: string; cls?: string } = {},
) {
  return slimService({
    metadata: {
      namespace: 'default',
      name,
      uid: `uid-${name}`,
      resourceVersion: '1',
      finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
      annotations: extra.annotations ?? {},
    },
    spec: {
      type: 'LoadBalancer',
      ...(extra.cls ? { loadBalancerClass: extra.cls } : {}),
      ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    },
    status: extra.ip
      ? { loadBalancer: { ingress: [{ ip: extra.ip }] } }
      : extra.hostname
        ? { loadBalancer: { ingress: [{ hostname: extra.hostname }] } }
        : {},
  });
}

/** The official load balancers by Service UID, as a provider's findOfficial answers. */
function adoption(
  found: Record<string, ForeignLoadBalancer>,
  add: string[],
): LoadBalancerAdoption & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async findOfficial(services, cluster) {
      asked.push(...services.map((s) => `${s.service.name}@${cluster}`));
      return new Map(Object.entries(found));
    },
    ownershipTags: () => ({ add }),
    async setTags() {
      throw new Error('a plan never tags');
    },
  };
}

const lb = (id: string, ip: string, tags: string[] = []): ForeignLoadBalancer => ({
  id,
  name: `lb-${id}`,
  addresses: [ip],
  tags,
});

describe('ccm migrate: the plan', () => {
  it('adopts a found load balancer, skips one already handed over, leaves a Service whose address differs, and says when nothing is found', async () => {
    const provider = adoption(
      {
        'uid-web': lb('1', '203.0.113.1', ['kube_service_x']),
        'uid-api': lb('2', '203.0.113.2'),
        'uid-moved': lb('3', '203.0.113.3'),
      },
      ['ccm-cluster:abc'],
    );
    const plans = await planMigration(
      [
        service('web', { ip: '203.0.113.1', annotations: { 'official/load-balancer-id': '1', other: 'x' } }),
        service('api', { ip: '203.0.113.2', annotations: { 'ccm.io/adopted-load-balancer': '2' } }),
        service('moved', { ip: '198.51.100.9' }),
        service('new'),
        service('other-class', { cls: 'example.com/lb' }),
      ],
      official,
      provider,
      'abc',
      'kubernetes',
      // api's hand-over, as a previous --yes recorded it.
      new Map([['uid-api', '2']]),
    );
    expect(provider.asked).toEqual([
      'web@kubernetes',
      'api@kubernetes',
      'moved@kubernetes',
      'new@kubernetes',
    ]);
    expect(plans.map((p) => [p.name, p.action, p.tags])).toEqual([
      ['web', 'adopt', ['ccm-cluster:abc']],
      ['api', 'adopted', []],
      ['moved', 'mismatch', []],
      ['new', 'none', []],
    ]);
    expect(plans[0]?.officialAnnotations).toEqual({ 'official/load-balancer-id': '1' });
    expect(plans[2]?.note).toContain('198.51.100.9');
    expect(plans[3]?.note).toContain('ccm builds one when it runs');
  });

  it("a Service whose load balancer is not the official controller's is not told ccm builds one", async () => {
    const plans = await planMigration(
      [service('served', { ip: '203.0.113.50' })],
      official,
      adoption({}, ['ccm-cluster:abc']),
      'abc',
      'kubernetes',
      new Map(),
    );
    expect(plans.map((p) => [p.action, p.note])).toEqual([
      [
        'none',
        `its load balancer (203.0.113.50) is not ${official.id}'s (ccm's already, or another's): nothing to hand over`,
      ],
    ]);
  });

  it("a Service whose ingress is a hostname only is told to add the IP, not that the load balancer is another's", async () => {
    const plans = await planMigration(
      [service('named', { hostname: 'named.example.com' })],
      official,
      adoption({}, ['ccm-cluster:abc']),
      'abc',
      'kubernetes',
      new Map(),
    );
    expect(plans.map((p) => [p.action, p.note])).toEqual([
      [
        'none',
        "its ingress shows no IP, only named.example.com, which names no load balancer: check which one is the Service's, add its IP to the Service's ingress, then run ccm migrate again (docs/migrate.md)",
      ],
    ]);
  });

  it('a tag ccm already put there is not added again', async () => {
    const plans = await planMigration(
      [service('web', { ip: '203.0.113.1' })],
      official,
      adoption({ 'uid-web': lb('1', '203.0.113.1', ['kube_service_x', 'ccm-cluster:abc']) }, [
        'ccm-cluster:abc',
      ]),
      'abc',
      'kubernetes',
      new Map(),
    );
    expect(plans[0]).toMatchObject({ action: 'adopt', tags: [] });
  });

  it('the report says what is re-tagged, and why nothing is where the cloud cannot tag', () => {
    const base = {
      provider: 'digitalocean',
      from: 'official-ccm',
      clusterID: 'abc',
      officialCluster: '',
      officialClusterFrom: "official-ccm's default",
      workloads: [
        { kind: 'Deployment' as const, namespace: 'kube-system', name: 'official-ccm', replicas: 1 },
      ],
      leases: [],
      secrets: [],
      configMaps: [],
      untouched: [],
      wrote: false,
    };
    const row = {
      namespace: 'default',
      name: 'web',
      action: 'adopt' as const,
      ingress: ['203.0.113.1'],
      finalised: true,
      officialAnnotations: {},
      loadBalancer: lb('1', '203.0.113.1'),
    };
    const tagged = migrateReport({
      ...base,
      mode: 'dry-run',
      services: [{ ...row, tags: ['ccm-cluster:abc'] }],
    });
    expect(tagged.summary).toContain('dry run, nothing written: 1 load balancer of official-ccm');
    expect(tagged.notes).toContain('  lb-1 (1): + ccm-cluster:abc');
    expect(tagged.notes?.some((n) => n.startsWith('Warning: kube-system/official-ccm still runs'))).toBe(
      true,
    );
    const untagged = migrateReport({
      ...base,
      mode: 'dry-run',
      retagNote: 'no tags here',
      services: [{ ...row, tags: [] }],
    });
    expect(untagged.notes).toContain("Re-tagged with ccm's ownership tag: nothing (no tags here)");
    const none = migrateReport({
      ...base,
      mode: 'apply',
      wrote: false,
      workloads: [],
      leases: [],
      services: [],
    });
    expect(none.summary).toBe(
      'nothing to do: no official-ccm found (no Deployment, DaemonSet or Lease of it), and no load balancer of it',
    );
    const nothingLeft = migrateReport({ ...base, mode: 'apply', wrote: false, services: [] });
    expect(nothingLeft.summary).toBe('nothing to do: no load balancer of official-ccm to hand over');
  });
});

describe('ccm migrate with no official controller: the dry run and --yes say the same, each line once', () => {
  const result = (mode: 'dry-run' | 'apply') => ({
    mode,
    provider: 'digitalocean',
    from: 'digitalocean-cloud-controller-manager',
    clusterID: 'abc',
    officialCluster: '',
    officialClusterFrom: "digitalocean-cloud-controller-manager's default",
    workloads: [],
    leases: [],
    secrets: [{ name: 'digitalocean', exists: true, compatible: true }],
    configMaps: [],
    // As the plan of a Service whose load balancer ccm built says it (the trial's `web`).
    services: [
      {
        namespace: 'default',
        name: 'web',
        action: 'none' as const,
        ingress: ['203.0.113.3'],
        finalised: true,
        officialAnnotations: {},
        tags: [],
        note: "its load balancer (203.0.113.3) is not digitalocean-cloud-controller-manager's (ccm's already, or another's): nothing to hand over",
      },
    ],
    untouched: [
      'every load balancer stays (ccm migrate creates and deletes none), with its name, id, addresses, listeners and backends',
      'finalizers and every other annotation of the Services',
    ],
    wrote: false,
  });

  it.each<[View, Terminal]>([
    ['table', { tty: true, width: 120, height: 40, colour: 0 }],
    ['lines', pipe],
  ])('%s', async (view, where) => {
    // Lines wrapped at the terminal's width read as one: every run of spaces and newlines as a space.
    const shown = async (mode: 'dry-run' | 'apply') =>
      (await render(migrateReport(result(mode)), view, where)).replace(/\s+/g, ' ');
    const dry = await shown('dry-run');
    const yes = await shown('apply');
    const summary =
      'nothing to do: no digitalocean-cloud-controller-manager found (no Deployment, DaemonSet or Lease of it), and no load balancer of it';
    expect(dry.startsWith(summary)).toBe(true);
    expect(yes.startsWith(summary)).toBe(true);
    expect(dry).not.toContain('--yes');
    for (const text of [dry, yes]) {
      expect(text.split('is not digitalocean-cloud-controller-manager').length - 1, text).toBe(1);
      expect(text.split('Secret kube-system/digitalocean').length - 1, text).toBe(1);
      expect(text).toContain('What ccm migrate found of digitalocean-cloud-controller-manager:');
      expect(text).not.toContain('Found of');
    }
  });
});

describe("ccm migrate: the official workload's own flags", () => {
  it('reads --cluster-name and --leader-elect-resource-name as --name=value or --name value, from any container', () => {
    // brightbox config/cloud-controller.yml passes args ["--cluster-name=brightbox-k8s", ...];
    // cloud-provider-openstack's DaemonSet "--cluster-name=$(CLUSTER_NAME)" (expanded by listWorkloads).
    const lines = [
      ['sidecar', '--cluster-name'],
      ['/bin/occm', '--cluster-name=brightbox-k8s', '--leader-elect-resource-name', 'occm'],
    ];
    expect(flagValue(lines, 'cluster-name')).toBe('brightbox-k8s');
    expect(flagValue(lines, 'leader-elect-resource-name')).toBe('occm');
    expect(flagValue(lines, 'leader-elect')).toBeUndefined();
  });
});
