import { KubeApiError, KubeConfigError } from '../../kube/errors.js';
import type { KubeTransport } from '../../kube/transport.js';
import { type FilesRead, filesReadBy } from '../../providers/config-files.js';
import type { Provider, ProviderDefinition, ProviderDeps } from '../../providers/types.js';
import {
  type CredentialSource,
  createProvider,
  credentialSource,
  originOf,
  resolveProviderValues,
  type SecretRef,
} from '../provider-config.js';
import type { RunDeps, RunInput } from './types.js';

/** The provider's configuration, resolved once at start; the reloads build from it too. */
export interface ProviderConfig {
  /** Where the credentials come from (the Secret read at start, if any), as the start says it. */
  credentials: CredentialSource;
  /** The Secret that reloads read again; none when the flags and the environment hold the credentials. */
  secretRef?: SecretRef;
  /** A provider from the flags, the environment and a Secret's `data`, wrapped as a test asks. */
  build(data: Readonly<Record<string, string>> | undefined): Provider;
  /** The provider built at start, and the files it read (what reloads compare with). */
  first: { value: Provider; files: FilesRead };
}

/**
 * The provider stage of `ccm run`: where the credentials come from (the Secret is read through the
 * transport), then the provider built from them. A configuration the provider refuses is an error
 * here, before anything is served or written.
 */
export async function resolveProvider(
  input: RunInput,
  deps: Pick<RunDeps, 'wrapProvider'>,
  {
    definition,
    transport,
    providerDeps,
  }: { definition: ProviderDefinition; transport: KubeTransport; providerDeps: ProviderDeps },
): Promise<ProviderConfig> {
  const credentials = await credentialSource(
    definition,
    { ...input, 'credentials-secret': input.credentialsSecret },
    input.env,
    transport,
  ).catch(configError);
  const secretRef = credentials.secret && {
    namespace: credentials.secret.namespace,
    name: credentials.secret.name,
  };
  const build = (data: Readonly<Record<string, string>> | undefined): Provider => {
    const values = resolveProviderValues(definition, input, input.env, data);
    const stored = secretRef && data ? { ...secretRef, data } : undefined;
    const origin = originOf(definition, input, input.env, stored);
    const provider = createProvider(definition, values, { ...providerDeps, origin }, stored);
    return deps.wrapProvider ? deps.wrapProvider(provider) : provider;
  };
  const first = filesReadBy(() => build(credentials.secret?.data));
  return { credentials, ...(secretRef ? { secretRef } : {}), build, first };
}

/**
 * The API server refusing to give the credentials is a configuration error too (exit 2); one that
 * cannot be reached is not (exit 1, docs/output.md): it may answer the next start.
 */
function configError(err: unknown): never {
  if (err instanceof KubeApiError) throw new KubeConfigError(err.message);
  throw err;
}
