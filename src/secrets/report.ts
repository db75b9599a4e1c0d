import { objectYaml } from '../cli/output/object-yaml.js';
import { defineReport, type Report } from '../cli/output/report.js';
import type { CreateSecretResult } from './create.js';

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The one Secret, as a row: -o name prints secret/<name>. */
export interface SecretRow {
  namespace: string;
  name: string;
  action: CreateSecretResult['action'];
  keys: string;
  changed: string;
}

/**
 * `ccm secret create` as a Report: the result (key names, never values) for -o json / -o yaml, a
 * one-row table for a person, the next commands as notes. A dry run is the Secret itself: YAML in
 * every human view and -o yaml, its values redacted unless --show-secrets put them in.
 */
export function secretReport(result: CreateSecretResult): Report<SecretRow> {
  const where = `${result.namespace}/${result.name}`;
  const row: SecretRow = {
    namespace: result.namespace,
    name: result.name,
    action: result.action,
    keys: result.keys.join(', '),
    changed: [...result.changedKeys, ...(result.changedLabels ?? []).map((l) => `label ${l}`)].join(', '),
  };
  const { manifest, ...data } = result;
  const summary =
    result.action === 'unchanged'
      ? `Secret ${where} unchanged (keys: ${row.keys}); nothing written`
      : result.action === 'dry-run'
        ? `Secret ${where} not written (--dry-run)`
        : `Secret ${where} ${result.action} (keys: ${row.keys}${
            result.action === 'updated' ? `; changed: ${row.changed}` : ''
          })`;
  const notes = [
    ...(result.verified ? [`Verified with ${result.provider}: ${result.verified}`] : []),
    ...(result.expires
      ? [
          `CMON certificate ${result.certificate ?? ''}; expires ${result.expires} (ccm doctor warns 14 days before)`,
        ]
      : []),
    ...(result.unverified ? [`Not checked with the cloud, as you chose: ${result.unverified}`] : []),
    ...(result.notStored.length
      ? [`Not stored in the Secret, so ccm run needs it as well: ${result.notStored.join(', ')}`]
      : []),
    ...(result.nextNote ? [result.nextNote] : []),
    'Next:',
    ...result.next.flatMap((c) => continued(c).map((line, i) => `${i === 0 ? '  ' : '      '}${line}`)),
  ];
  const yaml = () => objectYaml(manifest).trimEnd();
  return defineReport<SecretRow>({
    data: manifest ?? data,
    kind: 'secret',
    noun: ['Secret', 'Secrets'],
    rows: [row],
    name: (r) => r.name,
    tone: (r) => (r.action === 'unchanged' ? 'unchanged' : r.action === 'dry-run' ? 'ok' : 'changed'),
    columns: [
      { header: 'NAMESPACE', value: (r) => r.namespace },
      { header: 'NAME', value: (r) => r.name, give: 'last' },
      { header: 'ACTION', value: (r) => r.action, toned: true },
      { header: 'KEYS', value: (r) => r.keys, give: 'first' },
      { header: 'CHANGED', value: (r) => r.changed, blank: '-' },
    ],
    summary,
    notes,
    failed: false,
    ...(manifest ? { documents: { table: yaml, wide: yaml, lines: yaml, yaml } } : {}),
  });
}

/**
 * A long command as shell lines continued with a backslash, broken before a flag or a pipe, so that
 * it is copied whole from a terminal of 80 columns rather than cut where the terminal wraps it.
 */
export function continued(command: string, width = 72): string[] {
  const parts = command.split(/ (?=--[a-z]|\| )/);
  const lines: string[] = [];
  for (const part of parts) {
    const last = lines.length - 1;
    if (last >= 0 && `${lines[last]} ${part}`.length <= width) lines[last] = `${lines[last]} ${part}`;
    else lines.push(part);
  }
  return lines.map((line, i) => (i < lines.length - 1 ? `${line} \\` : line));
}
