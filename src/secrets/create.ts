import { oneLine, UsageError } from '../cli/errors.js';
import { transportOptionsFrom } from '../cli/kube-flags.js';
import { loadKubeConfig } from '../kube/config.js';
import { writeSecret } from '../kube/secrets.js';
import { KubeTransport } from '../kube/transport.js';
import { isUnreachable, UnauthorizedError } from '../providers/errors.js';
import { loadProvider } from '../providers/registry.js';
import type { ProviderDefinition, ProviderValues } from '../providers/types.js';
import {
  flagFor,
  type GivenValues,
  isFilePath,
  type Resolved,
  readValueFile,
  resolveGiven,
} from './values.js';

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'ccm' } as const;
const DEFAULT_NAMESPACE = 'kube-system';

export interface CreateSecretInput {
  provider?: string;
  given: GivenValues;
  name?: string;
  namespace?: string;
  verify: boolean;
  dryRun: boolean;
  showSecrets: boolean;
  /** stdin is a terminal: missing values are asked for. */
  interactive: boolean;
  /** stdout is a terminal: listr2 shows the steps. */
  progress: boolean;
  kubeconfig?: string;
  context?: string;
  requestTimeoutMs?: number;
  env: Readonly<Record<string, string | undefined>>;
  sshDir?: string;
  warn: (line: string) => void;
}

export interface CreateSecretResult {
  provider: string;
  namespace: string;
  name: string;
  action: 'created' | 'updated' | 'unchanged' | 'dry-run';
  /** Keys the Secret holds, and those this run changed: names only, never values. */
  keys: string[];
  changedKeys: string[];
  /** What the cloud said the credentials are (account, project), when verified. */
  verified?: string;
  /** Values given that the Secret does not hold (pass them to `ccm run` as flags or env). */
  notStored: string[];
  /** The Secret as it would be written, for --dry-run: values redacted unless showSecrets. */
  manifest?: Record<string, unknown>;
  next: string[];
}

/** `ccm secret create`: schema → values (flags, files, env, prompts) → one cloud call → the Secret. */
export async function createSecret(input: CreateSecretInput): Promise<CreateSecretResult> {
  // The prompts (@inquirer, sshpk) and the task list (listr2) are imported when they are used: for a
  // scripted run they were ~140 ms of start-up (docs/benchmarks.md, Start-up).
  const providerName =
    input.provider ?? (input.interactive ? await (await import('./prompts.js')).promptProvider() : undefined);
  if (!providerName)
    throw new UsageError('no provider given; pass --provider (e.g. --provider digitalocean)');
  const definition = await loadProvider(providerName);
  const stored = definition.credentials.fields.filter((f) => f.secretKey);
  if (stored.length === 0) {
    throw new UsageError(
      `${definition.name} keeps no credentials in a Secret; configure it with its flags and environment instead`,
    );
  }
  const namespace = input.namespace ?? DEFAULT_NAMESPACE;
  const name = input.name ?? definition.credentials.secretName ?? `${definition.name}-credentials`;
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace)) {
    throw new UsageError(
      `"${namespace}/${name}" is not a valid Secret namespace/name; use lower-case DNS names`,
    );
  }

  const resolved = resolveGiven(definition, input.given);
  if (input.interactive) {
    const { promptMissing } = await import('./prompts.js');
    await promptMissing(definition, resolved, {
      ...(input.sshDir ? { sshDir: input.sshDir } : {}),
      ...(input.env.SSH_AUTH_SOCK ? { agentSocket: input.env.SSH_AUTH_SOCK } : {}),
    });
  }
  for (const field of definition.credentials.fields) {
    if (field.required && !resolved.get(field.key)?.value.trim()) {
      const env = field.env.length ? ` or set ${field.env[0]}` : '';
      throw new UsageError(
        `${definition.name}: ${field.key} is missing; pass ${flagFor(definition, field)}${env} (or run in a terminal to be asked)`,
      );
    }
  }
  for (const [key, { source }] of resolved) {
    const field = definition.credentials.fields.find((f) => f.key === key);
    if (field?.secret && source === 'argv') {
      input.warn(
        `warning: ${key} was given on the command line, where shell history and ps can read it; prefer --from-stdin, --from-file or ${field.env[0] ?? 'a prompt'}`,
      );
    }
  }

  const data = secretData(definition, resolved);
  const values = providerValues(definition, resolved, data);
  // Building the provider runs its own checks (e.g. OpenStack parses cloud.conf with its parser).
  const provider = definition.create(values, {});
  const notStored = [...resolved.keys()].filter(
    (key) =>
      !definition.credentials.fields.find((f) => f.key === key)?.secretKey &&
      !(
        key === definition.configFileField &&
        stored.some((f) => f.prompt === 'editor' && data[f.secretKey ?? ''])
      ),
  );

  const result: CreateSecretResult = {
    provider: definition.name,
    namespace,
    name,
    action: 'dry-run',
    keys: Object.keys(data).sort(),
    changedKeys: [],
    notStored,
    next: [
      `ccm manifests --provider ${definition.name} --image <registry>/ccm:<version> --credentials-secret ${namespace}/${name} | kubectl apply --server-side -f -`,
      `ccm run --provider ${definition.name} --credentials-secret ${namespace}/${name}`,
    ],
  };

  let transport: KubeTransport | undefined;
  const { Listr } = await import('listr2');
  const steps = new Listr(
    [
      {
        title: 'Validate the credentials with the cloud',
        enabled: () => input.verify && provider.verifyCredentials !== undefined,
        task: async (_ctx, task) => {
          try {
            result.verified = await provider.verifyCredentials?.(AbortSignal.timeout(60_000));
          } catch (err) {
            // Unreachable is not refused: a good token must not look bad because of DNS or a proxy.
            const what = isUnreachable(err)
              ? `cannot reach ${definition.name}, so the credentials were not checked`
              : err instanceof UnauthorizedError
                ? `${definition.name} did not accept the credentials`
                : `checking the credentials with ${definition.name} failed`;
            throw new UsageError(`${what}: ${oneLine(err)}; nothing written (--no-verify skips this check)`);
          }
          task.title = `Credentials valid: ${result.verified}`;
        },
      },
      {
        title: 'Connect to the cluster',
        enabled: () => !input.dryRun,
        task: async (_ctx, task) => {
          const kc = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
          transport = new KubeTransport(
            kc,
            transportOptionsFrom({ 'request-timeout': input.requestTimeoutMs }),
          );
          task.title = `Cluster: ${transport.server}`;
        },
      },
      {
        title: `Write Secret ${namespace}/${name}`,
        enabled: () => !input.dryRun,
        task: async (_ctx, task) => {
          const written = await writeSecret(transport as KubeTransport, {
            namespace,
            name,
            data,
            ownedKeys: stored.map((f) => f.secretKey as string),
            labels: { ...MANAGED_BY },
          });
          result.action = written.action;
          result.changedKeys = written.changedKeys;
          task.title = `Secret ${namespace}/${name} ${written.action}`;
        },
      },
    ],
    { renderer: input.progress ? 'default' : 'silent', exitOnError: true, rendererOptions: {} },
  );
  await steps.run();
  if (input.dryRun) result.manifest = manifest(namespace, name, data, input.showSecrets);
  return result;
}

/** The Secret's data: each field's value under its secretKey; a key or document given by path is read. */
function secretData(definition: ProviderDefinition, resolved: Resolved): Record<string, string> {
  const data: Record<string, string> = {};
  for (const field of definition.credentials.fields) {
    if (!field.secretKey) continue;
    const given = resolved.get(field.key);
    let value = given?.source === 'default' ? undefined : given?.value;
    if (value !== undefined && field.prompt === 'ssh-key' && isFilePath(value))
      value = readValueFile(value, field.key);
    // The file a provider takes by path (--cloud-config) is stored as the document itself.
    if (value === undefined && field.prompt === 'editor' && definition.configFileField) {
      const path = resolved.get(definition.configFileField)?.value;
      if (path) value = readValueFile(path, '--cloud-config');
    }
    if (value !== undefined && value.trim() !== '') data[field.secretKey] = value;
  }
  return data;
}

/** The values the provider is built from: as `ccm run --credentials-secret` will see them, plus flags. */
function providerValues(
  definition: ProviderDefinition,
  resolved: Resolved,
  data: Record<string, string>,
): ProviderValues {
  const values: Record<string, string | undefined> = {};
  for (const field of definition.credentials.fields) {
    const fromSecret = field.secretKey ? data[field.secretKey] : undefined;
    values[field.key] = fromSecret ?? resolved.get(field.key)?.value;
  }
  // The stored document wins over the path it was read from, as it will in the cluster.
  if (definition.configFileField && Object.values(data).length && values[definition.configFileField]) {
    const documentField = definition.credentials.fields.find((f) => f.prompt === 'editor' && f.secretKey);
    if (documentField && values[documentField.key]) values[definition.configFileField] = undefined;
  }
  return values;
}

function manifest(namespace: string, name: string, data: Record<string, string>, show: boolean) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, labels: { ...MANAGED_BY } },
    type: 'Opaque',
    data: Object.fromEntries(
      Object.entries(data)
        .sort()
        .map(([k, v]) => [k, show ? Buffer.from(v, 'utf8').toString('base64') : '<redacted>']),
    ),
  };
}
