import { type K8sObject, manifestsAsYaml } from './manifests.js';
import type { WrittenManifests } from './manifests-out.js';
import { defineReport, type Report } from './output/report.js';
import { plural } from './output/text.js';

/** One object of `ccm manifests`, and the file it went to with --out. */
export interface ManifestRow {
  kind: string;
  /** The API group, '' for the core group. */
  group: string;
  name: string;
  namespace?: string;
  file?: string;
}

const NOUN = ['object', 'objects'] as const;

function rowOf(object: K8sObject, file?: string): ManifestRow {
  const apiVersion = typeof object.apiVersion === 'string' ? object.apiVersion : 'v1';
  return {
    kind: object.kind,
    group: apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '',
    name: object.metadata.name,
    ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
    ...(file ? { file } : {}),
  };
}

/** kubectl's -o name: `serviceaccount/ccm`, `deployment.apps/ccm`. */
function resource(row: ManifestRow): string {
  return `${row.kind.toLowerCase()}${row.group ? `.${row.group}` : ''}`;
}

const COLUMNS = [
  { header: 'KIND', value: (r: ManifestRow) => r.kind },
  { header: 'NAME', value: (r: ManifestRow) => r.name, give: 'last' as const },
  { header: 'NAMESPACE', value: (r: ManifestRow) => r.namespace },
];

/**
 * `ccm manifests` printing: every human view and -o yaml are the YAML documents of all objects, as
 * `kubectl apply -f -` takes them; -o json is a v1 List; -o name one `kind/name` line per object.
 */
export function manifestsReport(objects: readonly K8sObject[], provider: string): Report<ManifestRow> {
  const yaml = () => manifestsAsYaml(objects);
  return defineReport<ManifestRow>({
    data: { apiVersion: 'v1', kind: 'List', items: objects },
    kind: resource,
    noun: NOUN,
    rows: objects.map((o) => rowOf(o)),
    keepOrder: true,
    name: (r) => r.name,
    tone: () => 'ok',
    columns: COLUMNS,
    summary: `${plural(objects.length, NOUN)} for ${provider}`,
    failed: false,
    documents: { table: yaml, wide: yaml, lines: yaml, yaml },
  });
}

/**
 * `ccm manifests --provider triton --cmon`: a Prometheus configuration, not Kubernetes objects. Every
 * human view and -o yaml are its YAML (`yaml`, with comments); -o json is the configuration itself.
 * It has no rows: -o name is refused before it gets here.
 */
export function scrapeJobReport(
  config: { scrape_configs: { job_name: string }[] },
  yaml: string,
): Report<ManifestRow> {
  const text = () => yaml;
  return defineReport<ManifestRow>({
    data: config,
    kind: 'job',
    noun: ['scrape job', 'scrape jobs'],
    rows: [],
    name: (r) => r.name,
    tone: () => 'ok',
    columns: COLUMNS,
    summary: `Prometheus scrape job ${config.scrape_configs.map((j) => j.job_name).join(', ')}`,
    failed: false,
    documents: { table: text, wide: text, lines: text, yaml: text },
  });
}

/** `ccm manifests --out DIR`: what was written where, and what an earlier run wrote that is gone. */
export function manifestsWrittenReport(
  objects: readonly K8sObject[],
  written: WrittenManifests,
  dir: string,
): Report<ManifestRow> {
  const { files, removed } = written;
  const rows = objects.map((o, i) => rowOf(o, files[i]));
  return defineReport<ManifestRow>({
    data: { directory: dir, files: rows, removed },
    kind: resource,
    noun: NOUN,
    rows,
    keepOrder: true,
    name: (r) => r.name,
    tone: () => 'changed',
    columns: [...COLUMNS, { header: 'FILE', value: (r) => r.file, give: 'first' }],
    summary: `wrote ${plural(files.length, ['file', 'files'])} to ${dir}${
      removed.length > 0 ? `; removed ${plural(removed.length, ['file', 'files'])} an earlier run wrote` : ''
    }`,
    notes: removed.length > 0 ? [`Removed (no longer part of the manifests): ${removed.join(', ')}`] : [],
    failed: false,
  });
}
