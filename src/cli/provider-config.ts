import { readSecret } from '../kube/secrets.js';
import type { KubeTransport } from '../kube/transport.js';
import { loadProvider } from '../providers/registry.js';
import type { Provider, ProviderDefinition, ProviderValues } from '../providers/types.js';
import { UsageError } from './errors.js';

export interface ProviderFlags {
  provider?: string;
  'cloud-config'?: string;
  'cloud-api-url'?: string;
}

/** The flags of a command that reads the cluster and the cloud once (nodes init, nodes list, doctor). */
export interface ClusterAndCloudFlags extends ProviderFlags {
  kubeconfig?: string;
  context?: string;
  'credentials-secret'?: string;
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
  const values: Record<string, string | undefined> = {};
  for (const field of definition.credentials.fields) {
    const fromFlag =
      field.key === definition.configFileField
        ? flags['cloud-config']
        : field.key === definition.apiUrlField
          ? flags['cloud-api-url']
          : undefined;
    // A Secret named with --credentials-secret holds the values under the official controller's keys.
    const fromSecret = field.secretKey ? nonEmpty(secret?.[field.secretKey]) : undefined;
    const fromEnv = field.env.map((name) => env[name]).find((v) => v !== undefined && v !== '');
    values[field.key] = fromFlag ?? fromSecret ?? fromEnv;
  }
  return values;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value?.trim() ? value.trim() : undefined;
}

export async function providerFromFlags(
  flags: ProviderFlags,
  env: Readonly<Record<string, string | undefined>>,
  onCloudCall?: (what: string) => void,
  secret?: Readonly<Record<string, string>>,
): Promise<Provider> {
  if (!flags.provider)
    throw new UsageError(
      'no provider given; pass --provider (e.g. --provider cloudlycke) or set CCM_PROVIDER',
    );
  const definition = await loadProvider(flags.provider);
  return definition.create(resolveProviderValues(definition, flags, env, secret), { onCloudCall });
}

/**
 * The provider of a one-pass command: its values from the flags, the environment and, with
 * --credentials-secret, that Secret (read once, through the command's own transport).
 */
export async function providerWithSecret(
  flags: ClusterAndCloudFlags,
  env: Readonly<Record<string, string | undefined>>,
  transport: KubeTransport,
  onCloudCall?: (what: string) => void,
): Promise<Provider> {
  const ref = flags['credentials-secret'] ? parseSecretRef(flags['credentials-secret']) : undefined;
  const secret = ref ? await readSecret(transport, ref.namespace, ref.name) : undefined;
  return providerFromFlags(flags, env, onCloudCall, secret?.data);
}

/** `--credentials-secret namespace/name`, checked before anything is read. */
export function parseSecretRef(ref: string): { namespace: string; name: string } {
  const match = /^([a-z0-9][-a-z0-9]*)\/([a-z0-9][-a-z0-9.]*)$/.exec(ref);
  if (!match) {
    throw new UsageError(
      `--credentials-secret "${ref}" is not namespace/name; e.g. kube-system/digitalocean`,
    );
  }
  return { namespace: match[1] as string, name: match[2] as string };
}
