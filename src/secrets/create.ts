import { EXIT_INTERRUPTED, oneLine, UsageError } from '../cli/errors.js';
import { transportOptionsFrom } from '../cli/kube-flags.js';
import { screenedTasks } from '../cli/task-list.js';
import { loadKubeConfig } from '../kube/config.js';
import { type SecretWrite, type SecretWriteResult, writeSecret } from '../kube/secrets.js';
import { KubeTransport } from '../kube/transport.js';
import { isUnreachable, RetryableError, UnauthorizedError } from '../providers/errors.js';
import { loadProvider } from '../providers/registry.js';
import type { CredentialField, Provider, ProviderDefinition, ProviderValues } from '../providers/types.js';
import {
  flagFor,
  type GivenValues,
  isFilePath,
  nameOf,
  type Resolved,
  readValueFile,
  resolveGiven,
  stdinField,
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
  /** ccm's version, for the image in the next command. */
  version?: string;
  warn: (line: string) => void;
  /**
   * Triton: write CMON's client certificate (a kubernetes.io/tls Secret) instead of the credentials,
   * made and checked with them (src/providers/triton/cmon.ts).
   */
  cmon?: CmonRequest;
}

export interface CmonRequest {
  /** CMON's URL instead of CloudAPI ListServices' `cmon` entry (--cmon-url, TRITON_CMON_URL). */
  url?: string;
  /** A PEM file of the CAs CMON's certificate is checked against (--cmon-ca, TRITON_CMON_CA). */
  caFile?: string;
  /** The certificate's lifetime in days. */
  lifetimeDays?: number;
}

export interface CreateSecretResult {
  provider: string;
  namespace: string;
  name: string;
  action: 'created' | 'updated' | 'unchanged' | 'dry-run';
  /** Keys the Secret holds, and those this run changed: names only, never values. */
  keys: string[];
  changedKeys: string[];
  /** Labels of ccm's this run set on a Secret that lacked them (e.g. one made by hand). */
  changedLabels?: string[];
  /** What the cloud said the credentials are (account, project), when verified. */
  verified?: string;
  /** Why they were written unchecked, when the person chose that at the prompt (the cloud was away). */
  unverified?: string;
  /** Values given that the Secret does not hold, as `ccm run` takes them (its flag, else its variable). */
  notStored: string[];
  /** The Secret as it would be written, for --dry-run: secret values redacted unless showSecrets. */
  manifest?: Record<string, unknown>;
  next: string[];
  /** Why a value given here is left out of the next commands, when one is. */
  nextNote?: string;
  /** --cmon: when the certificate stops being valid (ISO 8601), and what it is. */
  expires?: string;
  certificate?: string;
}

/** Ctrl-C while ccm talks to the cluster or the cloud: one line, and 130 as a shell reports SIGINT. */
class InterruptedError extends Error {
  override name = 'InterruptedError';
  readonly oclif = { exit: EXIT_INTERRUPTED };
}

/**
 * The cloud could not be reached, or failed for the moment, so the credentials were not checked (not:
 * refused): the work failed (exit 1), a retry may help; on a terminal the typed address is asked again.
 */
class UnreachableCloudError extends Error {
  override name = 'UnreachableCloudError';
  constructor(
    message: string,
    readonly detail: string,
  ) {
    super(message);
  }
}

/** The cloud refused the credentials (not: could not be reached). */
class RefusedError extends UsageError {
  constructor(
    message: string,
    readonly detail: string,
  ) {
    super(message);
  }
}

const NOTHING_WRITTEN = 'cancelled (Ctrl-C); nothing was written';

/** `ccm secret create`: schema → values (flags, files, env, prompts) → one cloud call → the Secret. */
export async function createSecret(input: CreateSecretInput): Promise<CreateSecretResult> {
  const steps = new Steps(input.progress);
  // On a terminal the cluster is checked before anything is asked: a kubeconfig that cannot work is
  // said before the person has typed a token, not after.
  let cluster = input.interactive && !input.dryRun ? await connect(input, steps) : undefined;
  // The prompts (@inquirer, sshpk) and the task list (listr2) are imported when they are used: for a
  // scripted run they were ~140 ms of start-up (docs/benchmarks.md, Start-up).
  const providerName =
    input.provider ?? (input.interactive ? await (await import('./prompts.js')).promptProvider() : undefined);
  if (!providerName)
    throw new UsageError('no provider given; pass --provider (e.g. --provider digitalocean)');
  const definition = await loadProvider(providerName);
  if (input.cmon && definition.name !== 'triton')
    throw new UsageError(
      `--cmon: only the triton provider has CMON (Triton's Container Monitor), not ${definition.name}`,
    );
  // Read before anything is asked or called: a CA file that is not there is a typing error, and so
  // is a CMON URL that names no https port.
  const cmonCa = input.cmon?.caFile ? readValueFile(input.cmon.caFile, '--cmon-ca') : undefined;
  if (input.cmon?.url) (await import('../providers/triton/cmon-certificate.js')).checkCmonUrl(input.cmon.url);
  const stored = definition.credentials.fields.filter((f) => f.secretKey);
  if (stored.length === 0) {
    throw new UsageError(
      `${definition.name} keeps no credentials in a Secret; configure it with its flags and environment instead`,
    );
  }
  const namespace = input.namespace ?? DEFAULT_NAMESPACE;
  const name =
    input.name ??
    (input.cmon ? (await import('../providers/triton/cmon-certificate.js')).CMON_SECRET_NAME : undefined) ??
    definition.credentials.secretName ??
    `${definition.name}-credentials`;
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace)) {
    throw new UsageError(
      `"${namespace}/${name}" is not a valid Secret namespace/name; use lower-case DNS names`,
    );
  }

  const resolved = resolveGiven(definition, { ...input.given, secret: `${namespace}/${name}` });
  // --cmon: only what the certificate is signed with is asked (no CMON groups, which it does not hold).
  const only = input.cmon ? (await import('../providers/triton/index.js')).CMON_SIGNER_FIELDS : undefined;
  const promptOptions = {
    ...(only ? { only } : {}),
    ...(input.sshDir ? { sshDir: input.sshDir } : {}),
    ...(input.env.SSH_AUTH_SOCK ? { agentSocket: input.env.SSH_AUTH_SOCK } : {}),
    secret: `${namespace}/${name}`,
  };
  const asked = input.interactive
    ? await (await import('./prompts.js')).promptMissing(definition, resolved, promptOptions)
    : [];
  for (const field of definition.credentials.fields) {
    if (field.required && !resolved.get(field.key)?.value.trim())
      throw new UsageError(`${definition.name}: ${missingLine(definition, field, resolved)}`);
  }
  for (const [key, { source }] of resolved) {
    const field = definition.credentials.fields.find((f) => f.key === key);
    if (field?.secret && source === 'argv') {
      input.warn(
        `warning: ${nameOf(field)} was given on the command line, where shell history and ps can read it; prefer --from-stdin, --from-file or ${field.env[0] ?? 'a prompt'}`,
      );
    }
  }

  let { data, provider } = await build(definition, resolved);
  if (!input.dryRun) cluster ??= await connect(input, steps);

  let verified: string | undefined;
  let unverified: string | undefined;
  // A dry run calls nothing unless --verify asks it to.
  while (input.verify && provider.verifyCredentials) {
    try {
      verified = await verify(definition, provider, steps);
      break;
    } catch (err) {
      // On a terminal, a cloud that cannot be reached with what was typed here throws none of it
      // away: the address is asked again, or the Secret written unchecked, or nothing.
      if (input.interactive && asked.length > 0 && err instanceof UnreachableCloudError) {
        input.warn(`cannot reach ${definition.name}, so the credentials were not checked: ${err.detail}`);
        const prompts = await import('./prompts.js');
        const next = await prompts.promptUnreachable(definition, resolved, asked, promptOptions);
        // Exit 1, as the same cloud unreachable off a terminal (docs/output.md): it may answer later.
        if (next === 'stop')
          throw new UnreachableCloudError(
            `nothing written: ${definition.name} could not be reached (--no-verify skips the check)`,
            err.detail,
          );
        if (next === 'unchecked') {
          unverified = `${definition.name} could not be reached (${err.detail})`;
          break;
        }
        ({ data, provider } = await build(definition, resolved));
        continue;
      }
      // On a terminal a refused token is typed again, not the whole command run again.
      if (!input.interactive || !(err instanceof RefusedError)) throw err;
      const again = definition.credentials.fields.filter(
        (f) => asked.includes(f.key) && (f.secret || f.required),
      );
      if (again.length === 0) throw err;
      input.warn(`${definition.name} did not accept the credentials: ${err.detail}; try again (Ctrl-C ends)`);
      await (await import('./prompts.js')).promptAgain(
        definition,
        resolved,
        again.map((f) => f.key),
        promptOptions,
      );
      ({ data, provider } = await build(definition, resolved));
    }
  }

  if (input.cmon) {
    return cmonSecret(input, input.cmon, cmonCa, {
      definition,
      values: providerValues(definition, resolved, data),
      cluster,
      steps,
      namespace,
      name,
      verified,
      unverified,
    });
  }

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
    ...(verified !== undefined ? { verified } : {}),
    ...(unverified !== undefined ? { unverified } : {}),
    notStored: notStored.map((key) => givenAs(definition, key)),
    ...nextCommands(definition, input, `${namespace}/${name}`, resolved, notStored),
  };
  if (cluster) {
    const written = await write(cluster, steps, {
      namespace,
      name,
      data,
      ownedKeys: stored.map((f) => f.secretKey as string),
      labels: { ...MANAGED_BY },
    });
    result.action = written.action;
    result.changedKeys = written.changedKeys;
    if (written.changedLabels) result.changedLabels = written.changedLabels;
  }
  if (input.dryRun) result.manifest = manifest(definition, namespace, name, data, input.showSecrets);
  return result;
}

/**
 * A required value nothing gave, and the ways to give it: a secret through stdin, a file or its
 * variable (never `--set`, which the command itself warns about for a secret); anything else by flag.
 */
function missingLine(definition: ProviderDefinition, field: CredentialField, resolved: Resolved): string {
  const name = nameOf(field);
  const ways = field.secret
    ? [
        ...(stdinField(definition, resolved) === field ? ['pipe it to --from-stdin'] : []),
        `pass --from-file ${name}=FILE`,
      ]
    : [`pass ${flagFor(definition, field)}`];
  if (field.env[0]) ways.push(`set ${field.env[0]}`);
  const last = ways.pop();
  return `${name} is missing; ${ways.length ? `${ways.join(', ')} or ${last}` : last} (or run in a terminal to be asked)`;
}

/** One step of the task list. */
interface Step<T> {
  title: string;
  /** The step's work; `signal` is aborted by Ctrl-C. */
  work: (signal: AbortSignal) => Promise<T>;
  /** The title once it is done. */
  done: (value: T) => string;
  /** What Ctrl-C leaves: by default nothing written. `value` is set when the work finished anyway. */
  cancelled?: (value: T | undefined) => string;
  /** What a second Ctrl-C, which does not wait for the work to stop, leaves. */
  forced?: string;
}

/**
 * The steps a person watches on a terminal (listr2, one task list per step, since a refused token is
 * asked for between two of them). Ctrl-C is ccm's, not listr2's (which ends the process with 127):
 * it aborts the step's requests, and the command ends with 130 saying what was written.
 */
class Steps {
  private readonly ctrlC = new AbortController();
  /** The running step's task, while it runs on a terminal. */
  private task?: { output?: string };
  private overdue = 0;

  constructor(private readonly progress: boolean) {}

  /**
   * After how long a slow answer is said: on a terminal after 1 s (the API server) or 3 s (the
   * cloud), anywhere else after 10 s, as every command says it (kube-flags.ts).
   */
  noticeAfterMs(side: 'kube' | 'cloud'): number {
    return this.progress ? (side === 'kube' ? 1000 : 3000) : 10_000;
  }

  /**
   * What a slow answer is waited for (undefined: it came): under the running step on a terminal,
   * else one `ccm: waiting for …` line on stderr.
   */
  readonly notice = (what: string | undefined): void => {
    if (this.progress) {
      if (this.task) this.task.output = what ?? '';
    } else if (what === undefined) this.overdue--;
    else if (this.overdue++ === 0) process.stderr.write(`ccm: ${what}\n`);
  };

  async run<T>(step: Step<T>): Promise<T> {
    const { Listr } = await import('listr2');
    const { signal } = this.ctrlC;
    let result: { value: T } | undefined;
    const list = new Listr(
      screenedTasks([
        {
          title: step.title,
          task: async (_ctx, task) => {
            signal.throwIfAborted();
            this.task = task;
            try {
              result = { value: await step.work(signal) };
            } finally {
              this.task = undefined;
            }
            task.output = '';
            task.title = step.done(result.value);
          },
        },
      ]),
      {
        renderer: this.progress ? 'default' : 'silent',
        exitOnError: true,
        registerSignalListeners: false,
        // The error is ccm's one line on stderr; the task list says which step it was.
        rendererOptions: { showErrorMessage: false },
      },
    );
    const onSigint = () => {
      if (signal.aborted) {
        process.stderr.write(`ccm: ${step.forced ?? NOTHING_WRITTEN}\n`);
        process.exit(EXIT_INTERRUPTED);
      }
      this.ctrlC.abort(new InterruptedError(NOTHING_WRITTEN));
    };
    process.on('SIGINT', onSigint);
    try {
      await list.run();
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      process.off('SIGINT', onSigint);
    }
    if (signal.aborted)
      throw new InterruptedError(step.cancelled ? step.cancelled(result?.value) : NOTHING_WRITTEN);
    if (!result) throw new Error(`${step.title}: did not finish`);
    return result.value;
  }
}

/** The kubeconfig, then one request, so that "Cluster" is ticked only once the server has answered. */
async function connect(input: CreateSecretInput, steps: Steps): Promise<KubeTransport> {
  const kc = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  const transport = new KubeTransport(
    kc,
    transportOptionsFrom({
      'request-timeout': input.requestTimeoutMs,
      onWaiting: steps.notice,
      waitingNoticeMs: steps.noticeAfterMs('kube'),
    }),
  );
  await steps.run({
    title: `Connect to the cluster at ${transport.server}`,
    work: (signal) =>
      transport.request<{ gitVersion?: string } | undefined>({ method: 'GET', path: '/version', signal }),
    done: (answer) =>
      `Cluster: ${transport.server}${answer?.gitVersion ? ` (Kubernetes ${answer.gitVersion})` : ''}`,
  });
  return transport;
}

function verify(definition: ProviderDefinition, provider: Provider, steps: Steps): Promise<string> {
  return steps.run({
    title: 'Validate the credentials with the cloud',
    work: async (signal) => {
      // The cloud's own limits, as every command has them (up to 30 s an attempt, 5 attempts), said
      // as every command says them; no limit of this command's ends the check in words of its own.
      const { onCloudWait } = await import('../providers/http.js');
      const stopNotices = onCloudWait(steps.notice, steps.noticeAfterMs('cloud'));
      try {
        return (await provider.verifyCredentials?.(signal)) ?? '';
      } catch (err) {
        if (signal.aborted) throw err;
        // Unreachable is not refused: a good token must not look bad because of DNS or a proxy.
        const tail = '; nothing written (--no-verify skips this check)';
        // A cloud that cannot be reached, or answers 5xx, may answer later: exit 1, as the same cloud
        // in `nodes init` (docs/output.md).
        if (isUnreachable(err) || err instanceof RetryableError)
          throw new UnreachableCloudError(
            `${isUnreachable(err) ? `cannot reach ${definition.name}` : `${definition.name} failed for the moment`}, so the credentials were not checked: ${oneLine(err)}${tail}`,
            oneLine(err),
          );
        if (err instanceof UnauthorizedError)
          throw new RefusedError(
            `${definition.name} did not accept the credentials: ${oneLine(err)}${tail}`,
            oneLine(err),
          );
        throw new UsageError(
          `checking the credentials with ${definition.name} failed: ${oneLine(err)}${tail}`,
        );
      } finally {
        stopNotices();
      }
    },
    done: (verified) => `Credentials valid: ${verified}`,
  });
}

function write(transport: KubeTransport, steps: Steps, want: SecretWrite): Promise<SecretWriteResult> {
  const where = `${want.namespace}/${want.name}`;
  return steps.run({
    title: `Write Secret ${where}`,
    work: (signal) => writeSecret(transport, { ...want, signal }),
    done: (written) => `Secret ${where} ${written.action}`,
    // Ctrl-C stops the write before it is sent, not once it is: then it is done, and said so.
    cancelled: (written) =>
      written && written.action !== 'unchanged'
        ? `cancelled (Ctrl-C) too late: Secret ${where} was already ${written.action}`
        : NOTHING_WRITTEN,
    forced: `cancelled (Ctrl-C) while Secret ${where} was being written; see whether it was with kubectl -n ${want.namespace} get secret ${want.name}`,
  });
}

/** Adds what was not done to an error's line, keeping its class (and so its exit code). */
function nothingWritten(err: unknown, tail = '; nothing written'): never {
  // Ctrl-C's line already says what was written.
  if (err instanceof Error && !(err instanceof InterruptedError) && !err.message.endsWith(tail))
    err.message += tail;
  throw err;
}

/**
 * `--cmon`: the credentials (already proven with GetAccount, unless --no-verify) sign a CMON client
 * certificate, as `triton profile cmon-certgen` makes one; CloudAPI's ListServices says where CMON is
 * (none: the account's data centre has no CMON), CMON's /v1/discover must accept the certificate, and
 * only then is the kubernetes.io/tls Secret written. Nothing is written when any step fails.
 */
async function cmonSecret(
  input: CreateSecretInput,
  request: CmonRequest,
  ca: string | undefined,
  ctx: {
    definition: ProviderDefinition;
    values: ProviderValues;
    cluster: KubeTransport | undefined;
    steps: Steps;
    namespace: string;
    name: string;
    verified: string | undefined;
    unverified: string | undefined;
  },
): Promise<CreateSecretResult> {
  const { steps, namespace, name } = ctx;
  const { cmonAccess } = await import('../providers/triton/index.js');
  const cmon = await import('../providers/triton/cmon-certificate.js');
  const access = cmonAccess(ctx.values);
  let endpoint: import('../providers/triton/cmon-certificate.js').CmonEndpoint | undefined;
  if (input.verify) {
    endpoint = await steps
      .run({
        title: 'Find CMON (CloudAPI ListServices)',
        work: async (signal) => {
          // Checked even with --cmon-url: the account's data centre must have CMON, as for cmon-certgen.
          const service = (await access.listServices(signal)).cmon;
          if (!service) throw cmon.noCmon();
          return cmon.cmonEndpoint(service, request.url);
        },
        done: (e) => `CMON: ${e.origin}${e.name !== e.url.hostname ? ` (as ${e.name})` : ''}`,
      })
      .catch((err) => nothingWritten(err));
  }
  const certificate = await steps
    .run({
      title: `Make a CMON client certificate for account ${access.account}`,
      work: () =>
        cmon.makeCmonCertificate({
          account: access.account,
          signer: access.keySigner(),
          ...(request.lifetimeDays !== undefined ? { lifetimeDays: request.lifetimeDays } : {}),
        }),
      done: (c) =>
        `Certificate for account ${access.account}, signed by key ${c.signedBy}, valid until ${c.validUntil.toISOString()}`,
    })
    .catch((err) => nothingWritten(err));
  let verified = ctx.verified;
  if (endpoint) {
    const where = endpoint;
    const found = await steps
      .run({
        title: 'Check the certificate with CMON (GET /v1/discover)',
        work: (signal) =>
          cmon.cmonDiscover({
            endpoint: where,
            cert: certificate.cert,
            key: certificate.key,
            ...(ca ? { ca } : {}),
            ...(ctx.values.user?.trim() ? { user: ctx.values.user.trim() } : {}),
            signal,
          }),
        done: (d) => `CMON accepts the certificate: ${d.containers.length} instance(s) to scrape`,
      })
      .catch((err) => nothingWritten(err, '; nothing written (--no-verify skips this check)'));
    verified = `${verified ? `${verified}; ` : ''}CMON at ${where.origin} accepts the certificate (${found.containers.length} instance(s) of ${access.account})`;
    if (found.serverNameProblem) input.warn(`warning: ${found.serverNameProblem}`);
  }
  // --cmon-ca goes into the Secret as ca.crt, where the job of `ccm manifests --cmon --cmon-ca` reads it.
  const data: Record<string, string> = {
    'tls.crt': certificate.cert,
    'tls.key': certificate.key,
    ...(ca ? { 'ca.crt': ca } : {}),
  };
  const result: CreateSecretResult = {
    provider: ctx.definition.name,
    namespace,
    name,
    action: 'dry-run',
    keys: Object.keys(data).sort(),
    changedKeys: [],
    ...(verified !== undefined ? { verified } : {}),
    ...(ctx.unverified !== undefined ? { unverified: ctx.unverified } : {}),
    notStored: [],
    next: [
      `kubectl -n ${namespace} get secret ${name} -o jsonpath='{.data.tls\\.crt}' | base64 -d | openssl x509 -noout -subject -issuer -enddate`,
    ],
    expires: certificate.validUntil.toISOString(),
    certificate: `CN=${access.account}, issued by the key ${certificate.signedBy}`,
  };
  if (ctx.cluster) {
    const written = await write(ctx.cluster, steps, {
      namespace,
      name,
      data,
      // ca.crt only when given: one the operator put there stays.
      ownedKeys: ca ? ['tls.crt', 'tls.key', 'ca.crt'] : ['tls.crt', 'tls.key'],
      labels: { ...MANAGED_BY },
      type: 'kubernetes.io/tls',
    });
    result.action = written.action;
    result.changedKeys = written.changedKeys;
    if (written.changedLabels) result.changedLabels = written.changedLabels;
  }
  if (input.dryRun)
    result.manifest = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, labels: { ...MANAGED_BY } },
      type: 'kubernetes.io/tls',
      data: {
        'tls.crt': Buffer.from(certificate.cert, 'utf8').toString('base64'),
        'tls.key': input.showSecrets ? Buffer.from(certificate.key, 'utf8').toString('base64') : '<redacted>',
        ...(ca ? { 'ca.crt': Buffer.from(ca, 'utf8').toString('base64') } : {}),
      },
    };
  return result;
}

/** The provider built from the values, which runs its own checks (OpenStack parses cloud.conf). */
async function build(
  definition: ProviderDefinition,
  resolved: Resolved,
): Promise<{ data: Record<string, string>; provider: Provider }> {
  const data = secretData(definition, resolved);
  for (const field of definition.credentials.fields) {
    const value = field.secretKey ? data[field.secretKey] : undefined;
    if (field.prompt !== 'ssh-key' || value === undefined) continue;
    const { isPrivateKey } = await import('./ssh-keys.js');
    if (!isPrivateKey(value)) {
      const given = resolved.get(field.key);
      const path = given?.path ?? (given && isFilePath(given.value) ? given.value : undefined);
      throw new UsageError(
        `${nameOf(field)}${path ? ` (${path})` : ''} is not a PEM or OpenSSH private key; give the private key file (not the .pub)`,
      );
    }
  }
  // A provider's error names where a value was given here (--set vpc-id, --from-stdin), not the
  // official Secret and variables `ccm run` would read it from.
  const origin = (key: string) => {
    const given = resolved.get(key);
    if (given?.source === 'prompt') return 'the prompt';
    return given?.origin;
  };
  return {
    data,
    provider: definition.create(providerValues(definition, resolved, data), { origin }),
  };
}

/** How a value the Secret does not hold is given to `ccm run`: its flag, else its variable. */
function givenAs(definition: ProviderDefinition, key: string): string {
  const field = definition.credentials.fields.find((f) => f.key === key);
  if (!field) return key;
  const flag = flagFor(definition, field);
  return flag.startsWith('--set') ? (field.env[0] ?? flag) : flag;
}

/**
 * The commands that come next, whole: with the values the Secret does not hold (--cloud-api-url), and
 * the kubeconfig and context this command was given for the commands that run here. A plain-http API
 * URL (a simulator on this machine) is for `ccm run` here only: `ccm manifests` refuses it, since its
 * pods would send the token unencrypted from their Node, so it is left out there, and the note says so.
 */
function nextCommands(
  definition: ProviderDefinition,
  input: CreateSecretInput,
  secret: string,
  resolved: Resolved,
  notStored: readonly string[],
): Pick<CreateSecretResult, 'next' | 'nextNote'> {
  const flag = (name: string, value: string | undefined) => (value ? [`--${name}`, shellWord(value)] : []);
  const value = (key: string | undefined) =>
    key && notStored.includes(key) && resolved.get(key)?.source !== 'default'
      ? resolved.get(key)?.value
      : undefined;
  const url = value(definition.apiUrlField);
  const apiUrl = flag('cloud-api-url', url);
  const plainHttp = url !== undefined && URL.canParse(url) && new URL(url).protocol === 'http:';
  const kube = [...flag('kubeconfig', input.kubeconfig), ...flag('context', input.context)];
  const manifests = [
    'ccm manifests --provider',
    definition.name,
    '--image',
    `<registry>/ccm:${input.version ?? '<version>'}`,
    '--credentials-secret',
    secret,
    ...(plainHttp ? [] : apiUrl),
    '| kubectl apply',
    ...kube,
    '--server-side -f -',
  ];
  const run = [
    'ccm run --provider',
    definition.name,
    ...kube,
    '--credentials-secret',
    secret,
    ...apiUrl,
    ...flag('cloud-config', value(definition.configFileField)),
  ];
  return {
    next: [manifests.join(' '), run.join(' ')],
    ...(plainHttp
      ? {
          nextNote: `ccm manifests below leaves out --cloud-api-url ${url}: it takes no plain http, which its pods would send the token over unencrypted; give it the cloud's https URL`,
        }
      : {}),
  };
}

/** A word as a shell reads it back: quoted when it holds anything but safe characters. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
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
  // A document typed or built here wins over a path, as the stored one will in the cluster. One read
  // from a file (--cloud-config, --from-file, a path at the prompt) is checked by that path, so that
  // its errors name the file as every other command's do (`/tmp/cloud.conf line 7: …`).
  const documentField = definition.credentials.fields.find((f) => f.prompt === 'editor' && f.secretKey);
  const document = documentField ? resolved.get(documentField.key) : undefined;
  if (definition.configFileField && document)
    values[definition.configFileField] =
      document.path && isFilePath(document.path) ? document.path : undefined;
  return values;
}

/**
 * The Secret as it would be written. Values that are not secret (a URL, an account, a region) are
 * shown as they are, under stringData; secret ones are redacted unless --show-secrets, then base64
 * under data, as the API server keeps them.
 */
function manifest(
  definition: ProviderDefinition,
  namespace: string,
  name: string,
  data: Record<string, string>,
  show: boolean,
) {
  const secretKeys = new Set(definition.credentials.fields.filter((f) => f.secret).map((f) => f.secretKey));
  const entries = Object.entries(data).sort(([a], [b]) => a.localeCompare(b));
  const secret = entries.filter(([k]) => secretKeys.has(k));
  const plain = entries.filter(([k]) => !secretKeys.has(k));
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, labels: { ...MANAGED_BY } },
    type: 'Opaque',
    ...(secret.length
      ? {
          data: Object.fromEntries(
            secret.map(([k, v]) => [k, show ? Buffer.from(v, 'utf8').toString('base64') : '<redacted>']),
          ),
        }
      : {}),
    ...(plain.length ? { stringData: Object.fromEntries(plain) } : {}),
  };
}
