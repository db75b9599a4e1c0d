import { existsSync, readFileSync, statSync } from 'node:fs';
import { UsageError } from '../cli/errors.js';
import type { CredentialField, ProviderDefinition } from '../providers/types.js';

/** Where a value came from; `argv` for a secret field earns a warning (shell history, `ps`). */
export type ValueSource = 'flag' | 'argv' | 'file' | 'stdin' | 'env' | 'prompt' | 'default';

export interface GivenValues {
  /** `--set key=value`, by field key or by the Secret's key. */
  set: readonly string[];
  /** `--from-file key=path`. */
  fromFile: readonly string[];
  /** The content of stdin, for `--from-stdin`. */
  stdin?: string;
  /** `--cloud-config` / `--cloud-api-url`, which fill the fields the provider names for them. */
  cloudConfig?: string;
  cloudApiUrl?: string;
  env: Readonly<Record<string, string | undefined>>;
}

export interface ResolvedValue {
  value: string;
  source: ValueSource;
  /** The file it was read from (`--from-file`), for error lines. */
  path?: string;
}

export type Resolved = Map<string, ResolvedValue>;

/** The flag that gives a field, as a person types it (for error lines and help). */
export function flagFor(definition: ProviderDefinition, field: CredentialField): string {
  if (field.key === definition.configFileField) return '--cloud-config';
  if (field.key === definition.apiUrlField) return '--cloud-api-url';
  return `--set ${field.key}=…`;
}

export function fieldByName(definition: ProviderDefinition, name: string): CredentialField | undefined {
  return definition.credentials.fields.find((f) => f.key === name || f.secretKey === name);
}

function splitPair(flag: string, pair: string): [string, string] {
  const at = pair.indexOf('=');
  if (at <= 0) throw new UsageError(`${flag} "${pair.split('=')[0]}" is not key=value; e.g. ${flag} token=…`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}

/**
 * Every value given without asking: flags, files, stdin, the schema's environment variables, in
 * that order of precedence. Unknown keys are usage errors naming the keys this provider has.
 */
export function resolveGiven(definition: ProviderDefinition, given: GivenValues): Resolved {
  const fields = definition.credentials.fields;
  const known = () => fields.map((f) => f.key).join(', ');
  const resolved: Resolved = new Map();
  const lookup = (flag: string, name: string) => {
    const field = fieldByName(definition, name);
    if (!field)
      throw new UsageError(`${flag} ${name}: ${definition.name} has no such field; use one of: ${known()}`);
    return field;
  };
  for (const pair of given.set) {
    const [name, value] = splitPair('--set', pair);
    const field = lookup('--set', name);
    resolved.set(field.key, { value, source: field.secret ? 'argv' : 'flag' });
  }
  for (const pair of given.fromFile) {
    const [name, path] = splitPair('--from-file', pair);
    const field = lookup('--from-file', name);
    resolved.set(field.key, { value: readValueFile(path, `--from-file ${name}`), source: 'file', path });
  }
  if (given.stdin !== undefined) {
    const secrets = fields.filter((f) => f.secret && !resolved.has(f.key));
    const target = secrets.find((f) => f.required) ?? secrets[0];
    if (!target) {
      throw new UsageError(`--from-stdin: every secret field of ${definition.name} already has a value`);
    }
    resolved.set(target.key, { value: given.stdin.replace(/\r?\n$/, ''), source: 'stdin' });
  }
  if (given.cloudConfig && definition.configFileField && !resolved.has(definition.configFileField))
    resolved.set(definition.configFileField, { value: given.cloudConfig, source: 'flag' });
  if (given.cloudApiUrl && definition.apiUrlField && !resolved.has(definition.apiUrlField))
    resolved.set(definition.apiUrlField, { value: given.cloudApiUrl, source: 'flag' });
  for (const field of fields) {
    if (resolved.has(field.key)) continue;
    const fromEnv = field.env.map((name) => given.env[name]).find((v) => v !== undefined && v !== '');
    if (fromEnv !== undefined) resolved.set(field.key, { value: fromEnv, source: 'env' });
  }
  return resolved;
}

export function readValueFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(`${what}: cannot read ${path} (${code}); give the path of a readable file`);
  }
}

/** A value that names a file on this machine (an SSH key or config given by its path). */
export function isFilePath(value: string): boolean {
  if (value.includes('\n') || value.length > 4096) return false;
  try {
    return existsSync(value) && statSync(value).isFile();
  } catch {
    return false;
  }
}
