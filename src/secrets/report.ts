import { stringify } from 'yaml';
import type { CreateSecretResult } from './create.js';

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Text, JSON or YAML; a dry run prints the Secret itself. Never a value unless --show-secrets put it in the manifest. */
export function formatResult(result: CreateSecretResult, output: 'text' | 'json' | 'yaml'): string {
  if (result.manifest) {
    return output === 'json'
      ? JSON.stringify(result.manifest, null, 2)
      : stringify(result.manifest).trimEnd();
  }
  const { manifest: _omit, ...report } = result;
  if (output === 'json') return JSON.stringify(report, null, 2);
  if (output === 'yaml') return stringify(report).trimEnd();
  const where = `${result.namespace}/${result.name}`;
  const lines = [
    result.action === 'unchanged'
      ? `Secret ${where} unchanged (keys: ${result.keys.join(', ')}); nothing written`
      : `Secret ${where} ${result.action} (keys: ${result.keys.join(', ')}${
          result.action === 'updated' ? `; changed: ${result.changedKeys.join(', ')}` : ''
        })`,
  ];
  if (result.verified) lines.push(`Verified with ${result.provider}: ${result.verified}`);
  if (result.notStored.length)
    lines.push(`Not stored in the Secret (give them to ccm run): ${result.notStored.join(', ')}`);
  lines.push('Next:', ...result.next.map((c) => `  ${c}`));
  return lines.join('\n');
}
