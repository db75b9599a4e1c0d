import { KubeApiError } from '../kube/errors.js';
import { readSecret, type SecretData } from '../kube/secrets.js';
import type { KubeTransport } from '../kube/transport.js';
import { InvalidConfigError } from '../providers/errors.js';
import { loadProvider } from '../providers/registry.js';
import type { Provider, ProviderDefinition, ProviderDeps, ProviderValues } from '../providers/types.js';
import { UsageError } from './errors.js';
import { httpUrlFlag, parseSecretRef, type SecretRef } from './flag-values.js';
import type { KubeRequestFlags } from './kube-flags.js';

export interface ProviderFlags {
  provider?: string;
  'cloud-config'?: string;
  'cloud-api-url'?: string;
  /** Triton's CMON groups (a field's `flag`): refused with a provider that has no such field. */
  'cmon-groups'?: string;
}

/** The flags of a command that reads the cluster and the cloud once (nodes init, nodes list, doctor). */
export interface ClusterAndCloudFlags extends ProviderFlags, KubeRequestFlags {
  kubeconfig?: string;
  context?: string;
  'credentials-secret'?: string;
}

/**
 * `--cloud-api-url` must name an http(s) URL, for a provider that has an API URL: an empty value (an
 * unset shell variable) would otherwise mean the provider's real API, with these credentials.
 */
export function checkCloudApiUrl(provider: ProviderDefinition, url: string): void {
  if (!provider.apiUrlField) {
    throw new UsageError(
      `--cloud-api-url: the ${provider.name} provider has no API URL to set (its endpoint comes from its configuration)`,
    );
  }
  try {
    httpUrlFlag(url);
  } catch (err) {
    throw new UsageError(`--cloud-api-url: ${(err as Error).message}`);
  }
}

/**
 * The edge where a provider's configuration is resolved: `--cloud-config` and `--cloud-api-url` fill
 * the fields the provider names for them, every other field comes from its environment variables.
 */
export function resolveProviderValues(
  definition: ProviderDefinition,
  flags: ProviderFlags,
  env: Readonly<Record<string, string | undefined>>,
  secret?: Readonly<Record<string, string>>,
): ProviderValues {
  if (flags['cloud-api-url'] !== undefined) checkCloudApiUrl(definition, flags['cloud-api-url']);
  if (
    flags['cmon-groups'] !== undefined &&
    !definition.credentials.fields.some((f) => f.flag === 'cmon-groups')
  ) {
    throw new UsageError(
      `--cmon-groups: the ${definition.name} provider has no CMON groups (Triton's Container Monitor); leave it out`,
    );
  }
  const values: Record<string, string | undefined> = {};
  for (const field of definition.credentials.fields) {
    const fromFlag =
      field.key === definition.configFileField
        ? flags['cloud-config']
        : field.key === definition.apiUrlField
          ? flags['cloud-api-url']
          : field.flag
            ? (flags as Record<string, string | undefined>)[field.flag]
            : undefined;
    // A Secret named with --credentials-secret holds the values under the official controller's keys.
    const fromSecret = field.secretKey ? nonEmpty(secret?.[field.secretKey]) : undefined;
    const fromEnv = field.env.map((name) => env[name]).find((v) => v !== undefined && v !== '');
    values[field.key] = fromFlag ?? fromSecret ?? fromEnv;
  }
  return values;
}

/**
 * Where each field's value comes from, as resolveProviderValues chooses it (a flag, then the Secret,
 * then the environment), for the provider's error lines (ProviderDeps.origin): "--cloud-api-url",
 * "key access-token of Secret kube-system/do", "env DO_ACCESS_TOKEN". A field without a value belongs
 * in the Secret the operator named, when there is one.
 */
export function originOf(
  definition: ProviderDefinition,
  flags: ProviderFlags,
  env: Readonly<Record<string, string | undefined>>,
  secret?: SecretRef & { data: Readonly<Record<string, string>> },
): (field: string) => string | undefined {
  return (key) => {
    const field = definition.credentials.fields.find((f) => f.key === key);
    if (!field) return undefined;
    const given = flags as Record<string, string | undefined>;
    const flag =
      key === definition.configFileField
        ? 'cloud-config'
        : key === definition.apiUrlField
          ? 'cloud-api-url'
          : field.flag;
    if (flag && given[flag] !== undefined) return `--${flag}`;
    const inSecret =
      secret && field.secretKey
        ? `key ${field.secretKey} of Secret ${secret.namespace}/${secret.name}`
        : undefined;
    if (inSecret && nonEmpty(secret?.data[field.secretKey ?? ''])) return inSecret;
    const variable = field.env.find((name) => env[name] !== undefined && env[name] !== '');
    if (variable) return `env ${variable}`;
    return inSecret;
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value?.trim() ? value.trim() : undefined;
}

export async function providerFromFlags(
  flags: ProviderFlags,
  env: Readonly<Record<string, string | undefined>>,
  onCloudCall?: (what: string) => void,
  secret?: SecretRef & { data: Readonly<Record<string, string>> },
): Promise<Provider> {
  const definition = await definitionFromFlags(flags);
  return definition.create(resolveProviderValues(definition, flags, env, secret?.data), {
    onCloudCall,
    origin: originOf(definition, flags, env, secret),
  });
}

async function definitionFromFlags(flags: ProviderFlags): Promise<ProviderDefinition> {
  if (!flags.provider)
    throw new UsageError(
      'no provider given; pass --provider (e.g. --provider cloudlycke) or set CCM_PROVIDER',
    );
  return loadProvider(flags.provider);
}

export type { SecretRef } from './flag-values.js';

/** Where a command's cloud credentials came from, as it tells the user. */
export interface CredentialSource {
  /** The Secret read, if any. */
  secret?: SecretRef & SecretData;
  /** "Secret kube-system/digitalocean" or "flags and environment". */
  description: string;
}

/**
 * Where the credentials come from: the Secret named with --credentials-secret; else the flags and
 * the environment, when they configure the provider; else the Secret the provider's official
 * controller reads (kube-system/<name>, which `ccm secret create` writes). Flags always win over a
 * Secret's values, and a Secret's over the environment's.
 */
export async function credentialSource(
  definition: ProviderDefinition,
  flags: ClusterAndCloudFlags,
  env: Readonly<Record<string, string | undefined>>,
  transport: KubeTransport,
): Promise<CredentialSource> {
  const read = async (ref: SecretRef) => ({
    ...ref,
    ...(await readSecret(transport, ref.namespace, ref.name)),
  });
  const described = (secret: SecretRef & SecretData) => ({
    secret,
    description: `Secret ${secret.namespace}/${secret.name}`,
  });
  if (flags['credentials-secret']) {
    try {
      return described(await read(parseSecretRef(flags['credentials-secret'])));
    } catch (err) {
      // The Secret the operator named is missing or unreadable: a configuration error (exit 2), as
      // for `ccm run`, so a CronJob's podFailurePolicy fails fast instead of retrying.
      if (err instanceof KubeApiError && (err.status === 404 || err.status === 403)) {
        throw new InvalidConfigError(err.message);
      }
      throw err;
    }
  }
  const fromFlagsAndEnv = { description: 'flags and environment' };
  const secretName = definition.credentials.secretName;
  if (!secretName) return fromFlagsAndEnv;
  const missing = whatFlagsAndEnvLack(definition, flags, env);
  if (!missing) return fromFlagsAndEnv;
  // A --cloud-config file given and refused is the answer: the Secret is not looked for instead.
  if (definition.configFileField && flags['cloud-config']) throw missing;
  const ref = { namespace: 'kube-system', name: secretName };
  try {
    return described(await read(ref));
  } catch (err) {
    if (!(err instanceof KubeApiError) || (err.status !== 404 && err.status !== 403)) throw err;
    const why = err.status === 404 ? 'does not exist either' : 'is not readable either';
    throw new InvalidConfigError(`${missing.message} (Secret ${ref.namespace}/${ref.name} ${why})`);
  }
}

/** Why the flags and the environment alone do not configure the provider, or undefined when they do. */
export function whatFlagsAndEnvLack(
  definition: ProviderDefinition,
  flags: ProviderFlags,
  env: Readonly<Record<string, string | undefined>>,
): InvalidConfigError | undefined {
  try {
    definition.create(resolveProviderValues(definition, flags, env), {});
    return undefined;
  } catch (err) {
    if (err instanceof InvalidConfigError) return err;
    throw err;
  }
}

/**
 * The provider of a one-pass command (nodes init, nodes list): its values from the flags, the
 * environment and the Secret credentialSource chooses (read once, through the command's own transport).
 */
export async function providerWithSecret(
  flags: ClusterAndCloudFlags,
  env: Readonly<Record<string, string | undefined>>,
  transport: KubeTransport,
  onCloudCall?: (what: string) => void,
): Promise<{ provider: Provider; credentials: string }> {
  const definition = await definitionFromFlags(flags);
  const source = await credentialSource(definition, flags, env, transport);
  const values = resolveProviderValues(definition, flags, env, source.secret?.data);
  return {
    provider: createProvider(
      definition,
      values,
      { onCloudCall, origin: originOf(definition, flags, env, source.secret) },
      source.secret,
    ),
    credentials: source.description,
  };
}

/**
 * definition.create, whose refusal names the Secret the credentials came from when that Secret lacks
 * a key the provider requires: the provider's own line names only the default Secret, which the
 * operator may never have used.
 */
export function createProvider(
  definition: ProviderDefinition,
  values: ProviderValues,
  deps: ProviderDeps,
  secret?: SecretRef & { data: Readonly<Record<string, string>> },
): Provider {
  try {
    return definition.create(values, deps);
  } catch (err) {
    if (!(err instanceof InvalidConfigError) || !secret) throw err;
    const lacking = definition.credentials.fields.filter(
      (f) => f.required && f.secretKey && !values[f.key] && secret.data[f.secretKey] === undefined,
    );
    if (lacking.length === 0) throw err;
    const keys = lacking.map((f) => f.secretKey).join(', ');
    throw new InvalidConfigError(
      `Secret ${secret.namespace}/${secret.name} has no key ${keys}; add it, or name the Secret \`ccm secret create\` wrote with --credentials-secret`,
    );
  }
}

/** `--credentials-secret namespace/name`, checked before anything is read. */
export { parseSecretRef } from './flag-values.js';
