import type { MigrateResult, ServiceAction, ServicePlan } from './migrate.js';
import { defineReport, type Report, type Tone } from './output/report.js';
import { plural } from './output/text.js';

const TONE: Record<ServiceAction, Tone> = {
  adopt: 'changed',
  adopted: 'ok',
  restore: 'changed',
  none: 'ok',
  mismatch: 'warning',
};

/** What each action means, as the plan shows it. */
const SAID: Record<MigrateResult['mode'], Record<ServiceAction, string>> = {
  'dry-run': {
    adopt: 'will adopt',
    adopted: 'adopted',
    restore: 'will restore',
    none: 'nothing found',
    mismatch: 'left alone',
  },
  apply: {
    adopt: 'adopted',
    adopted: 'adopted before',
    restore: 'restored',
    none: 'nothing found',
    mismatch: 'left alone',
  },
  'rollback-dry-run': {
    adopt: 'adopt',
    adopted: 'adopted',
    restore: 'will restore',
    none: 'nothing found',
    mismatch: 'left alone',
  },
  rollback: {
    adopt: 'adopt',
    adopted: 'adopted',
    restore: 'restored',
    none: 'nothing found',
    mismatch: 'left alone',
  },
};

export function migrateReport(result: MigrateResult): Report<ServicePlan> {
  const adopt = result.services.filter((s) => s.action === 'adopt');
  const rollingBack = result.mode === 'rollback' || result.mode === 'rollback-dry-run';
  // With nothing to hand over, the dry run and --yes say the same: there is nothing to apply.
  const nothingToDo =
    result.workloads.length === 0 && result.leases.length === 0
      ? `nothing to do: no ${result.from} found (no Deployment, DaemonSet or Lease of it), and no load balancer of it`
      : `nothing to do: no load balancer of ${result.from} to hand over`;
  const summary =
    result.mode === 'rollback'
      ? `${plural(result.services.length, ['Service', 'Services'])} given back to ${result.from}`
      : result.mode === 'rollback-dry-run'
        ? `rollback plan, nothing written: ${plural(result.services.length, ['Service', 'Services'])} to give back to ${result.from}${result.services.length > 0 ? '; pass --yes to apply' : ''}`
        : adopt.length === 0 && !result.wrote
          ? nothingToDo
          : result.mode === 'dry-run'
            ? `dry run, nothing written: ${plural(adopt.length, 'load balancer')} of ${result.from} to hand to ccm (${result.provider}, cluster ${result.clusterID}); pass --yes to apply`
            : `${plural(adopt.length, 'load balancer')} of ${result.from} handed to ccm (cluster ${result.clusterID}); --rollback gives them back`;
  const found = [
    `cluster name in its names and tags: ${result.officialCluster ? `"${result.officialCluster}"` : 'none'} (${result.officialClusterFrom})`,
    ...result.workloads.map((w) => `${w.kind} ${w.namespace}/${w.name}: ${plural(w.replicas, 'replica')}`),
    ...result.leases.map((l) => `Lease kube-system/${l.name}${l.holder ? ` held by ${l.holder}` : ''}`),
    // Said here once, not again under "Not touched": ccm migrate never writes a Secret.
    ...result.secrets.map(
      (s) =>
        `Secret kube-system/${s.name}: ${
          !s.exists
            ? 'not found'
            : s.compatible
              ? 'ccm reads it as it is; left unchanged'
              : "its format differs from ccm's (ccm secret create writes ccm's); left unchanged"
        }`,
    ),
    ...result.configMaps.map((c) => `ConfigMap kube-system/${c.name}: ${c.exists ? 'found' : 'not found'}`),
  ];
  const running = result.workloads.filter((w) => w.replicas > 0);
  return defineReport<ServicePlan>({
    data: result,
    kind: 'service',
    noun: ['Service', 'Services'],
    rows: result.services,
    name: (s) => `${s.namespace}/${s.name}`,
    tone: (s) => TONE[s.action],
    columns: [
      { header: 'SERVICE', value: (s) => `${s.namespace}/${s.name}`, give: 'last' },
      { header: 'ACTION', value: (s) => SAID[result.mode][s.action], toned: true },
      {
        header: 'LOAD BALANCER',
        key: 'load_balancer',
        value: (s) => (s.loadBalancer ? `${s.loadBalancer.name} (${s.loadBalancer.id})` : undefined),
      },
      { header: 'IP', value: (s) => (s.loadBalancer?.addresses ?? s.ingress).join(',') || undefined },
      { header: 'TAGS', value: (s) => s.tags.join(',') || undefined, blank: '' },
      {
        header: 'OFFICIAL ANNOTATIONS',
        key: 'official_annotations',
        value: (s) =>
          Object.entries(s.officialAnnotations)
            .map(([k, v]) => `${k}=${v}`)
            .join(',') || undefined,
        wide: true,
      },
      // Under the row, whole: the reason a Service is left alone is said here only, never cut.
      { header: 'NOTE', value: (s) => s.note, blank: '', below: { label: 'note' } },
    ],
    summary,
    keepOrder: false,
    notes: [
      `What ccm migrate found of ${result.from}:${found.length === 0 ? ' nothing' : ''}`,
      ...found.map((l) => `  ${l}`),
      ...(rollingBack ? [] : retagLines(result)),
      'Not touched:',
      ...result.untouched.map((l) => `  ${l}`),
      ...(running.length > 0 && !rollingBack
        ? [
            `Warning: ${running.map((w) => `${w.namespace}/${w.name}`).join(', ')} still runs: two controllers would fight over the same load balancers; scale it to 0 before ccm runs`,
          ]
        : []),
    ],
    failed: false,
  });
}

/** What is (or would be) re-tagged with ccm's ownership tag, or why nothing is. */
function retagLines(result: MigrateResult): string[] {
  const tagged = result.services.filter((s) => s.tags.length > 0 && s.loadBalancer);
  if (tagged.length === 0) {
    return [`Re-tagged with ccm's ownership tag: nothing${result.retagNote ? ` (${result.retagNote})` : ''}`];
  }
  return [
    "Re-tagged with ccm's ownership tag (beside the official tags, which stay):",
    ...tagged.map((s) => `  ${s.loadBalancer?.name} (${s.loadBalancer?.id}): + ${s.tags.join(', ')}`),
  ];
}
