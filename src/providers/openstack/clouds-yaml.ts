import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { closest } from '../../closest.js';
import { FileNotRead, readConfigFile } from '../config-files.js';
import { InvalidConfigError } from '../errors.js';

/**
 * clouds.yaml (the OpenStack client configuration), as the official controller reads it with
 * `use-clouds=true`: one named cloud's `auth` and settings become [Global] keys of cloud.conf, under
 * any key cloud.conf sets itself. secure.yaml is not merged.
 */

/** Where clouds.yaml is looked for when no file is named, after OS_CLIENT_CONFIG_FILE. */
export function defaultCloudsFiles(): string[] {
  return [join(homedir(), '.config', 'openstack', 'clouds.yaml'), '/etc/openstack/clouds.yaml'];
}

const AUTH_KEYS: Record<string, string> = {
  auth_url: 'auth-url',
  username: 'username',
  user_id: 'user-id',
  password: 'password',
  project_id: 'tenant-id',
  tenant_id: 'tenant-id',
  project_name: 'tenant-name',
  tenant_name: 'tenant-name',
  project_domain_id: 'tenant-domain-id',
  project_domain_name: 'tenant-domain-name',
  user_domain_id: 'user-domain-id',
  user_domain_name: 'user-domain-name',
  domain_id: 'domain-id',
  domain_name: 'domain-name',
  application_credential_id: 'application-credential-id',
  application_credential_name: 'application-credential-name',
  application_credential_secret: 'application-credential-secret',
};

const CLOUD_KEYS: Record<string, string> = {
  region_name: 'region',
  interface: 'os-endpoint-type',
  cacert: 'ca-file',
  cert: 'cert-file',
  key: 'key-file',
};

const AUTH_TYPES = ['password', 'v3password', 'v3applicationcredential'];

/** The [Global] keys of cloud `name` (or of the only cloud) in the first readable file of `files`. */
export function cloudsYamlGlobal(files: readonly string[], name: string | undefined): Record<string, string> {
  const errors: string[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readConfigFile(file);
    } catch (err) {
      if (err instanceof FileNotRead) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      // Only a file that is not there passes to the next: one that failed to read (a dead mount)
      // must not switch ccm to another clouds.yaml, maybe another account.
      if (code !== 'ENOENT') {
        throw new InvalidConfigError(
          `cannot read ${file} (${code ?? 'unreadable'}); keeping to it rather than the next clouds.yaml`,
        );
      }
      errors.push(`${file} (${code})`);
      continue;
    }
    return fromDocument(text, file, name);
  }
  throw new InvalidConfigError(
    `no clouds.yaml found: ${errors.join(', ') || 'no file named'}; set [Global] clouds-file or OS_CLIENT_CONFIG_FILE`,
  );
}

function fromDocument(text: string, file: string, wanted: string | undefined): Record<string, string> {
  let doc: unknown;
  // `yaml` costs ~14 MB to load: required only when a clouds.yaml is read, not with the credential schema.
  const { parse } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  try {
    // Warnings off: `yaml` prints them to stderr quoting the line, which may hold a password.
    doc = parse(text, { logLevel: 'error' });
  } catch (err) {
    // Its message quotes the text too (an unquoted password starting with `*` reads as an alias):
    // only the kind of error and where.
    const { code, linePos } = err as { code?: string; linePos?: [{ line: number; col: number }] };
    const where = linePos ? ` at line ${linePos[0].line}, column ${linePos[0].col}` : '';
    throw new InvalidConfigError(
      `${file}: not YAML (${code ?? 'unreadable'}${where}); quote values that start with * ! & or %`,
    );
  }
  const clouds = (doc as { clouds?: Record<string, unknown> } | null)?.clouds;
  // Names of entries that are clouds: a bare value in a flow mapping (`{a: {…}, s3cret}`) is a key
  // too, and must not be quoted.
  const known = Object.entries(clouds ?? {})
    .filter(([, v]) => v !== null && typeof v === 'object')
    .map(([k]) => k);
  const name = wanted ?? (known.length === 1 ? known[0] : undefined);
  if (name === undefined) {
    throw new InvalidConfigError(
      `${file} holds ${known.length} clouds (${known.join(', ') || 'none'}); name one with [Global] cloud or OS_CLOUD`,
    );
  }
  const cloud = clouds?.[name] as Record<string, unknown> | undefined;
  if (!cloud || typeof cloud !== 'object') {
    throw new InvalidConfigError(
      `${file}: no cloud "${name}" under clouds (it has: ${known.join(', ') || 'none'}); set [Global] cloud or OS_CLOUD`,
    );
  }
  const out: Record<string, string> = {};
  const authType = cloud.auth_type === undefined ? 'password' : String(cloud.auth_type);
  if (!AUTH_TYPES.includes(authType)) {
    throw new InvalidConfigError(
      `${file}: clouds.${name}.auth_type is not one ccm supports; use ${AUTH_TYPES.join(', ')}`,
    );
  }
  const auth = (cloud.auth ?? {}) as Record<string, unknown>;
  for (const [key, value] of Object.entries(auth)) {
    const target = AUTH_KEYS[key];
    if (!target) {
      // Not repeated: a bare value in a flow mapping (`{username: u, s3cret}`) reads as a key.
      const near = closest(key, Object.keys(AUTH_KEYS));
      throw new InvalidConfigError(
        `${file}: clouds.${name}.auth has a key ccm does not support${near ? ` (did you mean ${near}?)` : ''}; the keys are ${Object.keys(AUTH_KEYS).join(', ')}`,
      );
    }
    if (value !== null && value !== undefined && value !== '') out[target] = String(value);
  }
  for (const [key, target] of Object.entries(CLOUD_KEYS)) {
    if (cloud[key] !== undefined && cloud[key] !== null) out[target] = String(cloud[key]);
  }
  if (cloud.verify === false) out['tls-insecure'] = 'true';
  return out;
}
