/**
 * What CMON's `GET /metrics` passes on for one instance: cmon-agent's Prometheus text
 * (TritonDataCenter/triton-cmon-agent). The shape follows cmon-agent's lib/instrumenter/collector.js:
 * one block per collector, each opening with the three meta metrics of addMetaMetrics
 * (`<collector>_metrics_available_boolean`, `_cached_boolean`, `_timer_seconds`) and then the
 * collector's metrics, `# HELP` and `# TYPE` once per name (META_FMT), `name value` or
 * `name{labels} value` (METRIC_FMT, LABELED_METRIC_FMT). The names, types and help texts are those of
 * lib/instrumenter/collectors-vm/zone_misc.js, memcap.js, link.js (labelled
 * `interface="vnic<N>"`), zfs.js and collectors-common/time.js; triton-cmon docs/README.md "List
 * Metrics" shows the same names. The values are made up, but derived from the machine so that two
 * instances differ and a scrape is repeatable.
 */
import type { SimMachine } from './server.js';

interface Metric {
  key: string;
  type: 'counter' | 'gauge';
  help: string;
  value: number;
  labels?: string;
}

/** A number from the machine's id, so that each instance's counters differ. */
function seed(id: string): number {
  return Number.parseInt(id.replace(/-/g, '').slice(0, 8), 16) || 1;
}

function collectors(machine: SimMachine, now: number): [string, Metric[]][] {
  const s = seed(machine.id);
  const memLimit = machine.memory * 1024 * 1024;
  const diskBytes = machine.disk * 1024 * 1024;
  return [
    [
      'zone_misc',
      [
        {
          key: 'cpu_user_usage',
          type: 'counter',
          help: 'User CPU utilization in nanoseconds',
          value: s * 1000,
        },
        { key: 'cpu_sys_usage', type: 'counter', help: 'System CPU usage in nanoseconds', value: s * 100 },
        { key: 'cpu_wait_time', type: 'counter', help: 'CPU wait time in nanoseconds', value: s * 10 },
        { key: 'load_average', type: 'gauge', help: 'Load average', value: 0.08203125 },
      ],
    ],
    [
      'memcap',
      [
        { key: 'mem_agg_usage', type: 'gauge', help: 'Aggregate memory usage in bytes', value: memLimit / 4 },
        { key: 'mem_limit', type: 'gauge', help: 'Memory limit in bytes', value: memLimit },
        { key: 'mem_swap', type: 'gauge', help: 'Swap in bytes', value: memLimit / 4 },
        { key: 'mem_swap_limit', type: 'gauge', help: 'Swap limit in bytes', value: memLimit * 4 },
      ],
    ],
    [
      'link',
      // One family after another (the text format wants a family's lines together), one line per NIC.
      (
        [
          ['net_agg_packets_in', 'Aggregate inbound packets', s],
          ['net_agg_packets_out', 'Aggregate outbound packets', s],
          ['net_agg_bytes_in', 'Aggregate inbound bytes', s * 64],
          ['net_agg_bytes_out', 'Aggregate outbound bytes', s * 64],
        ] as const
      ).flatMap(([key, help, value]) =>
        machine.ips.map(
          (_, i): Metric => ({
            key,
            type: 'counter',
            help,
            value: value + i,
            labels: `{interface="vnic${i}"}`,
          }),
        ),
      ),
    ],
    [
      'zfs',
      [
        { key: 'zfs_used', type: 'gauge', help: 'zfs space used in bytes', value: diskBytes / 10 },
        { key: 'zfs_available', type: 'gauge', help: 'zfs space available in bytes', value: diskBytes * 0.9 },
      ],
    ],
    [
      'time',
      [{ key: 'time_of_day', type: 'counter', help: 'System time in seconds since epoch', value: now }],
    ],
  ];
}

/** The Prometheus text (format 0.0.4) cmon-agent serves for a running instance. */
export function instanceMetrics(machine: SimMachine, now = Date.now()): string {
  let text = '';
  for (const [name, metrics] of collectors(machine, now)) {
    text += [
      `# HELP ${name}_metrics_available_boolean Whether ${name} metrics were available, 0 = false, 1 = true`,
      `# TYPE ${name}_metrics_available_boolean gauge`,
      `${name}_metrics_available_boolean 1`,
      `# HELP ${name}_metrics_cached_boolean Whether ${name} metrics came from cache, 0 = false, 1 = true`,
      `# TYPE ${name}_metrics_cached_boolean gauge`,
      `${name}_metrics_cached_boolean 0`,
      `# HELP ${name}_metrics_timer_seconds How long it took to gather the ${name} metrics`,
      `# TYPE ${name}_metrics_timer_seconds gauge`,
      `${name}_metrics_timer_seconds 0.001`,
      '',
    ].join('\n');
    const seen = new Set<string>();
    for (const m of metrics) {
      if (!seen.has(m.key)) {
        text += `# HELP ${m.key} ${m.help}\n# TYPE ${m.key} ${m.type}\n`;
        seen.add(m.key);
      }
      text += `${m.key}${m.labels ?? ''} ${m.value}\n`;
    }
  }
  return text;
}
