import { existsSync, readFileSync, statSync } from 'node:fs';
import { expectedText, UsageError } from '../cli/errors.js';
import { didYouMean } from '../cli/flag-values.js';
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
  /** The Secret written (namespace/name), for error lines. */
  secret?: string;
}

export interface ResolvedValue {
  value: string;
  source: ValueSource;
  /** The file it was read from (`--from-file`), for error lines. */
  path?: string;
  /** Where it was given, as error lines name it: "--set vpc-id", "env DO_ACCESS_TOKEN", "--from-stdin". */
  origin?: string;
  /** A document built from questions at the prompt: the answers, so one can be asked again. */
  answers?: Record<string, string>;
}

export type Resolved = Map<string, ResolvedValue>;

/** A field as `--set` and the lines about it name it: its Secret key (`access-token`), else its own (`apiUrl`). */
export function nameOf(field: CredentialField): string {
  return field.secretKey ?? field.key;
}

/** The flag that gives a field, as a person types it (for error lines and help). */
export function flagFor(definition: ProviderDefinition, field: CredentialField): string {
  if (field.key === definition.configFileField) return '--cloud-config';
  if (field.key === definition.apiUrlField) return '--cloud-api-url';
  return `--set ${nameOf(field)}=…`;
}

export function fieldByName(definition: ProviderDefinition, name: string): CredentialField | undefined {
  return definition.credentials.fields.find((f) => f.key === name || f.secretKey === name);
}

function splitPair(flag: string, pair: string): [string, string] {
  const at = pair.indexOf('=');
  // Only what comes before an "=": "=dop_v1_…" must not print the token.
  if (at <= 0) throw new UsageError(`${flag}: ${expectedText('key=value', pair.split('=')[0] ?? '')}`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}

/**
 * Every value given without asking: flags, files, stdin, the schema's environment variables, in
 * that order of precedence. Unknown keys are usage errors naming the keys this provider has.
 */
export function resolveGiven(definition: ProviderDefinition, given: GivenValues): Resolved {
  const fields = definition.credentials.fields;
  const resolved: Resolved = new Map();
  const lookup = (flag: string, name: string) => {
    const field = fieldByName(definition, name);
    if (!field) throw new UsageError(`${flag}: ${unknownField(definition, name, given.secret)}`);
    return field;
  };
  for (const pair of given.set) {
    const [name, value] = splitPair('--set', pair);
    const field = lookup('--set', name);
    resolved.set(field.key, { value, source: field.secret ? 'argv' : 'flag', origin: `--set ${name}` });
  }
  for (const pair of given.fromFile) {
    const [name, path] = splitPair('--from-file', pair);
    const field = lookup('--from-file', name);
    resolved.set(field.key, {
      value: readValueFile(path, `--from-file ${name}`),
      source: 'file',
      path,
      origin: `--from-file ${name}=${path}`,
    });
  }
  if (given.stdin !== undefined) {
    const target = stdinField(definition, resolved);
    if (!target) {
      throw new UsageError(`--from-stdin: every secret field of ${definition.name} already has a value`);
    }
    const value = given.stdin.replace(/\r?\n$/, '');
    // `</dev/null`, or a `pass show` that failed: said as that, not as a value missing somewhere.
    if (value.trim() === '')
      throw new UsageError(
        `--from-stdin: expected the ${nameOf(target)} on stdin, got nothing (stdin was empty)`,
      );
    resolved.set(target.key, { value, source: 'stdin', origin: '--from-stdin' });
  }
  if (given.cloudConfig && definition.configFileField && !resolved.has(definition.configFileField))
    resolved.set(definition.configFileField, {
      value: given.cloudConfig,
      source: 'flag',
      origin: '--cloud-config',
    });
  if (given.cloudApiUrl && definition.apiUrlField && !resolved.has(definition.apiUrlField))
    resolved.set(definition.apiUrlField, {
      value: given.cloudApiUrl,
      source: 'flag',
      origin: '--cloud-api-url',
    });
  for (const field of fields) {
    if (resolved.has(field.key)) continue;
    const variable = field.env.find((name) => given.env[name] !== undefined && given.env[name] !== '');
    if (variable !== undefined)
      resolved.set(field.key, {
        value: given.env[variable] as string,
        source: 'env',
        origin: `env ${variable}`,
      });
  }
  return resolved;
}

/** The field `--from-stdin` fills: the first required secret without a value, else the first secret. */
export function stdinField(definition: ProviderDefinition, resolved: Resolved): CredentialField | undefined {
  const secrets = definition.credentials.fields.filter((f) => f.secret && !resolved.has(f.key));
  return secrets.find((f) => f.required) ?? secrets[0];
}

/**
 * A `--set` or `--from-file` name the provider does not have: the Secret's keys and the other fields
 * by the names they are given with, and the closest one.
 */
function unknownField(definition: ProviderDefinition, name: string, secret?: string): string {
  const fields = definition.credentials.fields;
  const keys = fields.flatMap((f) => (f.secretKey ? [f.secretKey] : []));
  const others = fields.flatMap((f) => (f.secretKey ? [] : [f.key]));
  const where = secret ? `Secret ${secret}` : `${definition.name}'s Secret`;
  const expected = [
    ...(keys.length ? [`${keys.join(', ')} (the keys of ${where})`] : []),
    ...(others.length ? [`${others.join(', ')} (for the check, not stored)`] : []),
  ].join(' or ');
  const near = didYouMean(name, [...keys, ...fields.map((f) => f.key)]);
  return `${expectedText(`one of ${expected}`, name)}${near}`;
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
