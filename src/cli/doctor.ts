import { existsSync } from 'node:fs';
import { KUBEADM_FLAGS_ENV } from '../cluster/detect.js';
import { localHost } from '../cluster/host.js';
import { viewOf } from '../controllers/cloud-view.js';
import { brakeVerdict, managedNodes } from '../controllers/deletion-brake.js';
import { selectControllers } from '../controllers/manager.js';
import { clusterIdentity } from '../kube/cluster-identity.js';
import { loadKubeConfig } from '../kube/config.js';
import { readDeletionRecord } from '../kube/deletion-record.js';
import {
  type AccessRequest,
  type LeaseInfo,
  listPods,
  listWorkloads,
  type PodInfo,
  readLease,
  serverVersion,
  serviceAccountMay,
  type WorkloadInfo,
} from '../kube/diagnostics.js';
import { KubeApiError } from '../kube/errors.js';
import { createNodeClient } from '../kube/nodes.js';
import { listSecretsNamed, readSecret } from '../kube/secrets.js';
import type { SlimNode } from '../kube/slim-node.js';
import { KubeTransport } from '../kube/transport.js';
import { NODE_DELETIONS_NAMESPACE } from '../kube/well-known.js';
import { isUnreachable, UnauthorizedError } from '../providers/errors.js';
import { parseProviderID } from '../providers/provider-id.js';
import { loadProvider, providerNames } from '../providers/registry.js';
import type { Instance, Provider, ProviderDefinition, ProviderValues } from '../providers/types.js';
import { readValueFile } from '../secrets/values.js';
import {
  type AccessVerdict,
  argValue,
  brakeSetting,
  type CheckResult,
  type CmonClusterGroups,
  type CmonSecretOutcome,
  type CredentialsOutcome,
  checkApiServer,
  checkApiServerFlags,
  checkApiServerUnreachable,
  checkCmonAccess,
  checkCmonCertificate,
  checkCmonNodeNames,
  checkCmonNoSecret,
  checkCmonSecretsUnlisted,
  checkCmonServerCertificate,
  checkCmonTargets,
  checkControllerManager,
  checkControllerPods,
  checkCredentials,
  checkDeletionBrake,
  checkForeignProviderIDs,
  checkKubeletsExternal,
  checkLease,
  checkListing,
  checkLocalKubelet,
  checkOfficialController,
  checkProviderIDs,
  checkRbacNeeded,
  checkRbacSecrets,
  checkRoutes,
  checkRoutesOff,
  checkSecret,
  checkUninitialized,
  controllerManagerLeads,
  leaderElectionOff,
  type RoutesOutcome,
  type RoutesSetting,
  routesSetting,
} from './doctor-checks.js';
import { oneLine } from './errors.js';
import { transportOptionsFrom } from './kube-flags.js';
import { clusterRules, nodeDeletionsRules } from './manifests.js';
import { isOfficial } from './migrate.js';
import {
  type ClusterAndCloudFlags,
  checkCloudApiUrl,
  parseSecretRef,
  providerFromFlags,
  resolveProviderValues,
  whatFlagsAndEnvLack,
} from './provider-config.js';

type ProviderFlagsGiven = Pick<ClusterAndCloudFlags, 'cloud-api-url' | 'credentials-secret'>;

/** `ccm doctor`: reads the cluster (and the cloud, with --provider) once, and checks it end to end. */

export interface DoctorInput extends ClusterAndCloudFlags {
  namespace: string;
  lease: string;
  'service-account': string;
  controllers: string;
  /** The identity in ccm's ownership tags, when `ccm run` is given one (default: from kube-system). */
  'cluster-name'?: string;
  /** Triton: the CMON certificate's Secret (namespace/name); given, it must exist. */
  'cmon-secret'?: string;
  /** Triton: CMON's URL instead of CloudAPI ListServices' cmon entry. */
  'cmon-url'?: string;
  /** Triton: a PEM file of the CAs CMON's certificate is checked against. */
  'cmon-ca'?: string;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
}

export interface DoctorResult {
  checks: CheckResult[];
  failed: number;
  warnings: number;
}

const CCM_POD_SELECTOR = 'app.kubernetes.io/name=ccm,app.kubernetes.io/component=controller';

/**
 * The result; with --provider given, a fix names that provider where it would say `<cloud>`, and a
 * `ccm manifests` or `ccm migrate` in it gets the --credentials-secret and --cloud-api-url given here,
 * so that it is copied whole. `ccm manifests` takes no plain-http URL (its pods would send the token
 * unencrypted from their Node): such a URL is left out of it, and the fix says so.
 */
export function resultOf(checks: CheckResult[], provider?: string, input?: ProviderFlagsGiven): DoctorResult {
  const url = input?.['cloud-api-url'];
  const secret = input?.['credentials-secret'];
  const plainHttp = url !== undefined && URL.canParse(url) && new URL(url).protocol === 'http:';
  const word = (w: string) => (/^[\w@%+=:,./~-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`);
  const extra = (withUrl: boolean) =>
    `${secret ? ` --credentials-secret ${word(secret)}` : ''}${url && withUrl ? ` --cloud-api-url ${word(url)}` : ''}`;
  const name = (fix: string) => {
    const deploys = fix.includes('`ccm manifests --provider <cloud> --image');
    const named = fix
      .replaceAll(
        'ccm manifests --provider <cloud>',
        `ccm manifests --provider ${provider}${extra(!plainHttp)}`,
      )
      .replaceAll('ccm migrate --provider <cloud>', `ccm migrate --provider ${provider}${extra(true)}`)
      .replaceAll('--provider <cloud>', `--provider ${provider}`);
    return deploys && plainHttp
      ? `${named} (with the cloud's https URL: ccm manifests refuses the plain-http --cloud-api-url ${url}, which its pods would send the token over unencrypted)`
      : named;
  };
  const named = provider ? checks.map((c) => (c.fix ? { ...c, fix: name(c.fix) } : c)) : checks;
  return {
    checks: named,
    failed: checks.filter((c) => c.status === 'fail').length,
    warnings: checks.filter((c) => c.status === 'warn').length,
  };
}

export async function runDoctor(input: DoctorInput): Promise<DoctorResult> {
  const now = input.now?.() ?? new Date();
  const definition = input.provider ? await loadProvider(input.provider) : undefined;
  if (definition && input['cloud-api-url'] !== undefined)
    checkCloudApiUrl(definition, input['cloud-api-url']);
  // Triton's --cmon-url is a typing error before anything is read, as in secret create (exit 2).
  if (definition?.name === 'triton' && input['cmon-url'])
    (await import('../providers/triton/cmon-certificate.js')).checkCmonUrl(input['cmon-url']);
  const secretRef = input['credentials-secret']
    ? parseSecretRef(input['credentials-secret'])
    : definition?.credentials.secretName
      ? { namespace: 'kube-system', name: definition.credentials.secretName }
      : undefined;
  const auth = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  const http = new KubeTransport(auth, transportOptionsFrom(input));
  try {
    let version: Awaited<ReturnType<typeof serverVersion>>;
    try {
      version = await serverVersion(http);
    } catch (err) {
      return resultOf([checkApiServerUnreachable(oneLine(err), auth.inCluster)]);
    }
    const sa = { namespace: input.namespace, name: input['service-account'] };
    const leaseRef = { namespace: input.namespace, name: input.lease };
    const [nodes, kcm, apiservers, lease, ccmPods, secret, access, workloads, kcmLease] = await Promise.all([
      createNodeClient(http).listNodes(),
      listPods(http, 'kube-system', 'component=kube-controller-manager'),
      listPods(http, 'kube-system', 'component=kube-apiserver'),
      readLease(http, leaseRef.namespace, leaseRef.name),
      listPods(http, input.namespace, CCM_POD_SELECTOR),
      secretRef ? readSecretOutcome(http, secretRef) : Promise.resolve(undefined),
      reviewAccess(http, sa, input, secretRef),
      listWorkloads(http),
      readLease(http, 'kube-system', 'kube-controller-manager').catch(() => undefined),
    ]);
    const checks: CheckResult[] = [
      checkApiServer(http.server, version, auth.insecure),
      checkUninitialized(nodes, now),
      checkProviderIDs(nodes),
    ];
    if (definition) checks.push(checkForeignProviderIDs(nodes, definition.providerIdScheme));
    checks.push(
      checkControllerManager(kcm, kcmLease, now),
      checkApiServerFlags(version, apiservers),
      checkKubeletsExternal(nodes),
      ...optional(
        checkLocalKubelet(
          await localHost()
            .processes(['kubelet'])
            .catch(() => []),
          existsSync(KUBEADM_FLAGS_ENV),
        ),
      ),
    );
    const ccmWorkload = workloads.find((w) => w.namespace === input.namespace && w.name === 'ccm');
    const deployed = deployedRun(workloads, input.namespace, ccmPods);
    // Deployed without leader election (one replica): no Lease to hold, and no Role for one.
    const withoutLease = deployed !== undefined && leaderElectionOff(deployed.args);
    const leaseCheck = checkLease(lease, leaseRef, now, ccmWorkload, withoutLease);
    checks.push(
      leaseCheck,
      checkControllerPods(
        ccmPods,
        input.namespace,
        leaseCheck.status === 'pass',
        ccmWorkload,
        controllerManagerLeads(kcmLease, now),
      ),
    );
    checks.push(
      await officialControllerCheck(http, definition, workloads, leaseRef, lease, ccmPods.length > 0, now),
    );
    const saName = `${sa.namespace}/${sa.name}`;
    const needed = withoutLease ? access.needed.filter((v) => !/^\S+ leases\b/.test(v.what)) : access.needed;
    checks.push(checkRbacNeeded(needed, saName), checkRbacSecrets(access.secrets, saName));
    if (!definition) {
      checks.push({
        id: 'cloud',
        status: 'warn',
        message: 'no --provider: credentials and the cloud listing are not checked',
        fix: 'pass --provider (and its credentials) to check the cloud too',
      });
      return resultOf(checks);
    }
    if (secretRef && secret) {
      checks.push(checkSecret(definition.credentials, secretRef, secret.data, secret.error));
    }
    const clusterID = () => clusterIdentity(http, input['cluster-name']);
    const routes = routesSetting(deployed);
    const brake = { http, setting: brakeSetting(deployed), now };
    let instances: readonly Instance[] | undefined;
    checks.push(
      ...(await cloudChecks(
        clusterID,
        definition,
        input,
        nodes,
        secretRef,
        secret?.data,
        routes,
        brake,
        (i) => {
          instances = i;
        },
      )),
    );
    if (definition.name === 'triton')
      checks.push(
        ...(await cmonChecks(
          http,
          definition,
          input,
          secretRef,
          secret?.data,
          nodes,
          instances,
          deployed,
          now,
        )),
      );
    return resultOf(checks, definition.name, input);
  } finally {
    await http.close();
  }
}

/**
 * `ccm run`'s arguments as deployed: its DaemonSet's (or with --any-node Deployment's), named ccm as
 * `ccm manifests` names it, else a ccm Pod's.
 */
function deployedRun(
  workloads: readonly WorkloadInfo[],
  namespace: string,
  pods: readonly PodInfo[],
): { args: string[]; where: string } | undefined {
  const workload = workloads.find((w) => w.namespace === namespace && w.name === 'ccm');
  const fromWorkload = workload?.commandLines.find((c) => c.includes('run'));
  if (workload && fromWorkload)
    return { args: fromWorkload, where: `${workload.kind} ${namespace}/${workload.name}` };
  const pod = pods.find((p) => p.spec?.containers?.length);
  const container = pod?.spec?.containers?.[0];
  if (!pod || !container) return undefined;
  return {
    args: [...(container.command ?? []), ...(container.args ?? [])],
    where: `Pod ${namespace}/${pod.metadata?.name}`,
  };
}

/** The official controllers of the cloud given (else of every cloud) beside ccm. */
async function officialControllerCheck(
  http: KubeTransport,
  definition: ProviderDefinition | undefined,
  workloads: readonly WorkloadInfo[],
  leaseRef: { namespace: string; name: string },
  ccmLease: LeaseInfo | undefined,
  ccmPods: boolean,
  now: Date,
): Promise<CheckResult> {
  const definitions = definition ? [definition] : await Promise.all(providerNames.map(loadProvider));
  const officials = definitions.flatMap((d) => d.officialControllers ?? []);
  const leaseNames = [...new Set(officials.flatMap((o) => o.leases))].filter((n) => n !== leaseRef.name);
  const leases = await Promise.all(
    leaseNames.map(async (name) => ({ name, info: await readLease(http, 'kube-system', name) })),
  );
  const found = workloads.flatMap((w) =>
    officials
      .filter((o) => isOfficial(w, o))
      .slice(0, 1)
      .map((o) => ({
        controller: o.id,
        kind: w.kind,
        namespace: w.namespace,
        name: w.name,
        replicas: w.replicas,
      })),
  );
  return checkOfficialController(
    found,
    [{ name: leaseRef.name, info: ccmLease }, ...leases],
    { lease: leaseRef.name, running: ccmPods },
    now,
  );
}

async function readSecretOutcome(
  http: KubeTransport,
  ref: { namespace: string; name: string },
): Promise<{ data?: Record<string, string>; error?: string }> {
  try {
    return { data: (await readSecret(http, ref.namespace, ref.name)).data };
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return {};
    return { error: oneLine(err) };
  }
}

/** Why the credentials could not be shown good: no answer, a refusal, or something else. */
function credentialsFailure(err: unknown): CredentialsOutcome {
  const why = isUnreachable(err) ? 'unreachable' : err instanceof UnauthorizedError ? 'refused' : 'other';
  return { error: oneLine(err), why };
}

async function routesOutcome(provider: Provider, clusterID: () => Promise<string>): Promise<RoutesOutcome> {
  const routes = provider.routes;
  if (!routes) return { unsupported: provider.noRoutesReason ?? `the ${provider.name} provider has none` };
  try {
    return { routes: await routes.list(await clusterID()) };
  } catch (err) {
    return { error: oneLine(err) };
  }
}

async function cloudChecks(
  clusterID: () => Promise<string>,
  definition: ProviderDefinition,
  input: DoctorInput,
  nodes: Parameters<typeof checkListing>[0],
  secretRef: { namespace: string; name: string } | undefined,
  secret: Record<string, string> | undefined,
  routes: RoutesSetting,
  brake: { http: KubeTransport; setting: ReturnType<typeof brakeSetting>; now: Date },
  /** Given the cloud's instances, when they could be listed (for the CMON checks). */
  listed: (instances: readonly Instance[]) => void = () => undefined,
): Promise<CheckResult[]> {
  let provider: Provider;
  let where = `the environment / --cloud-config of ${definition.name}`;
  try {
    // The same choice as every command's (credentialSource): the default Secret only when the flags
    // and the environment are not enough.
    const useSecret =
      secretRef !== undefined &&
      (input['credentials-secret'] !== undefined ||
        whatFlagsAndEnvLack(definition, input, input.env) !== undefined);
    if (useSecret) where = `Secret ${secretRef.namespace}/${secretRef.name}`;
    provider = await providerFromFlags(
      input,
      input.env,
      undefined,
      useSecret && secret ? { ...secretRef, data: secret } : undefined,
    );
  } catch (err) {
    return [checkCredentials(credentialsFailure(err), where)];
  }
  const [verified, listing] = await Promise.all([
    provider.verifyCredentials
      ? provider.verifyCredentials().then(
          (ok) => ({ ok }),
          (err: unknown) => credentialsFailure(err),
        )
      : Promise.resolve(undefined),
    provider.instances.list().then(
      (instances) => ({ instances }),
      (err: unknown) => ({ error: oneLine(err) }),
    ),
  ]);
  const checks: CheckResult[] = [];
  if (verified) checks.push(checkCredentials(verified, where));
  if (verified && 'error' in verified) return checks; // the listing would only repeat the refusal
  checks.push(
    checkListing(
      nodes,
      definition.providerIdScheme,
      listing,
      verified && 'ok' in verified ? verified.ok : '',
    ),
  );
  if ('instances' in listing) listed(listing.instances);
  if ('instances' in listing)
    checks.push(await deletionBrakeCheck(brake, nodes, listing.instances, provider, secretRef));
  // Only where `ccm run` runs the route controller: deployed without it (no --cluster-cidr, or `route`
  // left out of --controllers), the cluster has no routes to miss.
  if (selectControllers(input.controllers).enabled.includes('route'))
    checks.push(
      routes.on
        ? checkRoutes(nodes, await routesOutcome(provider, clusterID))
        : checkRoutesOff(nodes, routes),
    );
  return checks;
}

/**
 * Triton's CMON certificate (`ccm secret create --cmon`), when its Secret exists or --cmon-secret
 * names it: its expiry, its account against ccm's, whether CMON's /v1/discover accepts it, and which of
 * the cluster's Nodes' machines it lists in the cluster's group. Prometheus' Triton discovery ignores
 * /v1/discover's status and lists what CMON lists, so a refused certificate, another account's, or
 * machines without the group are an empty target list there: here each is a row with its reason.
 */
async function cmonChecks(
  http: KubeTransport,
  definition: ProviderDefinition,
  input: DoctorInput,
  credentialsRef: { namespace: string; name: string } | undefined,
  credentials: Record<string, string> | undefined,
  nodes: readonly SlimNode[],
  instances: readonly Instance[] | undefined,
  deployed: { args: string[]; where: string } | undefined,
  now: Date,
): Promise<CheckResult[]> {
  const groups = await cmonClusterGroups(http, input, credentialsRef, credentials, deployed);
  const rows = await cmonCertificateChecks(http, definition, input, credentialsRef, credentials, {
    nodes,
    groups,
    now,
  });
  // The Node names Prometheus will give the series, when CMON is in use (a certificate, or groups).
  const inUse = groups !== undefined || rows.some((r) => r.id === 'cmon-access');
  const managed = tritonMachines(nodes).map((n) => ({ name: n.name, providerID: `triton://${n.machine}` }));
  if (!inUse || !instances || managed.length === 0) return rows;
  const { nodeLabelProblems } = await import('../providers/triton/cmon.js');
  const machines = instances.flatMap((i) => {
    const id = parseProviderID(i.providerID)?.id;
    return id ? [{ id, name: i.name }] : [];
  });
  return [...rows, checkCmonNodeNames(nodeLabelProblems(managed, machines), managed.length)];
}

async function cmonCertificateChecks(
  http: KubeTransport,
  definition: ProviderDefinition,
  input: DoctorInput,
  credentialsRef: { namespace: string; name: string } | undefined,
  credentials: Record<string, string> | undefined,
  { nodes, groups, now }: { nodes: readonly SlimNode[]; groups: CmonClusterGroups | undefined; now: Date },
): Promise<CheckResult[]> {
  const cmon = await import('../providers/triton/cmon-certificate.js');
  const values = cmonValues(definition, input, credentialsRef, credentials);
  const account = values?.account?.trim() || undefined;
  const context = { values, account, groups, nodes, input, now };
  const given = input['cmon-secret'];
  if (given) return cmonSecretChecks(http, parseSecretRef(given), true, context);
  // Where the docs tell operators to put it: the default name in Prometheus' namespace, whichever
  // that is (a Pod mounts only Secrets of its own), or kube-system where secret create writes it.
  let found: { namespace: string; name: string; data: Record<string, string> }[];
  try {
    found = await listSecretsNamed(http, cmon.CMON_SECRET_NAME, 'kubernetes.io/tls');
  } catch (err) {
    const fallback = { namespace: 'kube-system', name: cmon.CMON_SECRET_NAME };
    return [
      checkCmonSecretsUnlisted(oneLine(err), fallback),
      ...(await cmonSecretChecks(http, fallback, false, context)),
    ];
  }
  if (found.length === 0) return [checkCmonNoSecret(cmon.CMON_SECRET_NAME, groups)];
  const rows: CheckResult[] = [];
  for (const secret of found) {
    const ref = { namespace: secret.namespace, name: secret.name };
    rows.push(...(await cmonSecretChecks(http, ref, false, { ...context, data: secret.data })));
  }
  return rows;
}

/** One certificate Secret's rows: its expiry and account, CMON's answer to it, and the targets. */
async function cmonSecretChecks(
  http: KubeTransport,
  ref: { namespace: string; name: string },
  required: boolean,
  context: {
    values: ProviderValues | undefined;
    account: string | undefined;
    groups: CmonClusterGroups | undefined;
    nodes: readonly SlimNode[];
    input: DoctorInput;
    now: Date;
    /** The Secret's data, when the listing brought it. */
    data?: Record<string, string>;
  },
): Promise<CheckResult[]> {
  const cmon = await import('../providers/triton/cmon-certificate.js');
  const { values, account, groups, nodes, input, now } = context;
  let outcome: CmonSecretOutcome;
  let pair: { cert: string; key: string; ca?: string } | undefined;
  try {
    const data = context.data ?? (await readSecret(http, ref.namespace, ref.name)).data;
    const cert = data['tls.crt'];
    const key = data['tls.key'];
    if (!cert?.trim() || !key?.trim()) outcome = { error: 'it has no tls.crt and tls.key' };
    else {
      outcome = cmon.readCmonCertificate(cert);
      // ca.crt (secret create --cmon --cmon-ca): the CA the scrape job checks CMON against.
      const ca = data['ca.crt']?.trim() ? data['ca.crt'] : undefined;
      pair = { cert, key, ...(ca ? { ca } : {}) };
    }
  } catch (err) {
    outcome =
      err instanceof KubeApiError && err.status === 404
        ? { absent: true, required }
        : { error: oneLine(err) };
  }
  const expiry = checkCmonCertificate(ref, outcome, now, account);
  if (!expiry) return [];
  // Another account's certificate: CMON would list that account's machines, nothing to check here.
  const foreign = account !== undefined && 'account' in outcome && outcome.account !== account;
  if (!pair || foreign) return [expiry];
  const access = await cmonAccessOutcome(values, input, pair, groups?.names);
  if ('error' in access) return [expiry, checkCmonAccess(access, ref)];
  const server = checkCmonServerCertificate(access.found.serverNameProblem);
  const machines = tritonMachines(nodes);
  const listed = new Set(access.found.containers.map((c) => c.vm_uuid.toLowerCase()));
  // Some Node's machine is not in the group: the account's whole list tells an untagged machine from
  // one CMON does not list at all (stopped, another account's).
  let listedWithoutGroups: Set<string> | undefined;
  if (groups && machines.some((m) => !listed.has(m.machine))) {
    listedWithoutGroups = await access.discover().then(
      (all) => new Set(all.containers.map((c) => c.vm_uuid.toLowerCase())),
      () => undefined,
    );
  }
  return [
    expiry,
    checkCmonAccess({ instances: listed.size, where: access.where }, ref),
    ...(server ? [server] : []),
    checkCmonTargets({
      account: account ?? ('account' in outcome ? outcome.account : ''),
      secret: ref,
      nodes: machines,
      ...(groups ? { groups } : {}),
      listed,
      ...(listedWithoutGroups ? { listedWithoutGroups } : {}),
    }),
  ];
}

/** The Nodes with a Triton provider ID, and their machines' UUIDs. */
function tritonMachines(nodes: readonly SlimNode[]): { name: string; machine: string }[] {
  const found: { name: string; machine: string }[] = [];
  for (const node of nodes) {
    const parsed = parseProviderID(node.spec?.providerID ?? '');
    if (parsed?.scheme === 'triton' && parsed.id)
      found.push({ name: node.metadata?.name ?? '', machine: parsed.id.toLowerCase() });
  }
  return found;
}

/** Triton's values as every command resolves them (the default Secret only when flags and env lack). */
function cmonValues(
  definition: ProviderDefinition,
  input: DoctorInput,
  credentialsRef: { namespace: string; name: string } | undefined,
  credentials: Record<string, string> | undefined,
): ProviderValues | undefined {
  const useSecret =
    credentialsRef !== undefined &&
    (input['credentials-secret'] !== undefined ||
      whatFlagsAndEnvLack(definition, input, input.env) !== undefined);
  try {
    return resolveProviderValues(definition, input, input.env, useSecret ? credentials : undefined);
  } catch {
    return undefined; // the credentials row says why
  }
}

/**
 * The groups ccm keeps on the cluster's machines, as `ccm run` is given them: doctor's --cmon-groups,
 * else the deployed ccm's, else its credentials Secret's key cmon-groups, else TRITON_CMON_GROUPS; with
 * the cluster identity from --cluster-name (doctor's, else the deployed ccm's) or kube-system's UID.
 * Undefined when ccm keeps none (unset, `none`) or they cannot be named.
 */
async function cmonClusterGroups(
  http: KubeTransport,
  input: DoctorInput,
  credentialsRef: { namespace: string; name: string } | undefined,
  credentials: Record<string, string> | undefined,
  deployed: { args: string[]; where: string } | undefined,
): Promise<CmonClusterGroups | undefined> {
  const fromDeployed = deployed ? argValue(deployed.args, 'cmon-groups') : undefined;
  const fromSecret = credentials?.['cmon-groups']?.trim() || undefined;
  const fromEnv = input.env.TRITON_CMON_GROUPS?.trim() || undefined;
  const [spec, from] =
    input['cmon-groups'] !== undefined
      ? [input['cmon-groups'], '--cmon-groups']
      : fromDeployed
        ? [fromDeployed, `--cmon-groups of ${deployed?.where}`]
        : fromSecret && credentialsRef
          ? [fromSecret, `key cmon-groups of Secret ${credentialsRef.namespace}/${credentialsRef.name}`]
          : fromEnv
            ? [fromEnv, 'env TRITON_CMON_GROUPS']
            : [undefined, ''];
  if (!spec) return undefined;
  const { parseCmonGroups } = await import('../providers/triton/cmon-spec.js');
  const { groupsFor } = await import('../providers/triton/cmon.js');
  try {
    const parsed = parseCmonGroups(spec.trim());
    const name = input['cluster-name'] ?? (deployed ? argValue(deployed.args, 'cluster-name') : undefined);
    const clusterID = await clusterIdentity(http, name || undefined);
    const names = groupsFor(parsed, clusterID, ['control-plane', 'worker']);
    return names.length > 0 ? { names, spec: `--cmon-groups ${spec.trim()}`, from } : undefined;
  } catch {
    return undefined; // ccm run refuses such a value at start, in one line
  }
}

type CmonAccess =
  | {
      found: import('../providers/triton/cmon-certificate.js').Discovered;
      where: string;
      /** /v1/discover again with the same certificate, without groups. */
      discover(): Promise<import('../providers/triton/cmon-certificate.js').Discovered>;
    }
  | { error: string; why: 'unreachable' | 'refused' | 'other' };

async function cmonAccessOutcome(
  values: ProviderValues | undefined,
  input: DoctorInput,
  { ca: secretCa, ...pair }: { cert: string; key: string; ca?: string },
  groups: readonly string[] | undefined,
): Promise<CmonAccess> {
  const cmon = await import('../providers/triton/cmon-certificate.js');
  let endpoint: import('../providers/triton/cmon-certificate.js').CmonEndpoint;
  let ca: string | undefined;
  try {
    ca = input['cmon-ca'] ? readValueFile(input['cmon-ca'], '--cmon-ca') : secretCa;
    const override = input['cmon-url'];
    // CloudAPI names CMON unless --cmon-url gives a name of its own (an address needs CMON's name).
    let service: string | undefined;
    if (cmon.needsServiceName(override)) {
      if (!values) throw new Error("ccm's Triton credentials are not usable (see the credentials row)");
      const { cmonAccess } = await import('../providers/triton/index.js');
      service = (await cmonAccess(values).listServices()).cmon;
    }
    endpoint = cmon.cmonEndpoint(service, override);
  } catch (err) {
    return { error: `finding CMON: ${oneLine(err)}`, why: isUnreachable(err) ? 'unreachable' : 'other' };
  }
  const discover = (asked?: readonly string[]) =>
    cmon.cmonDiscover({ endpoint, ...pair, ...(ca ? { ca } : {}), ...(asked ? { groups: asked } : {}) });
  try {
    return {
      found: await discover(groups),
      where: `CMON at ${endpoint.origin}`,
      discover: () => discover(),
    };
  } catch (err) {
    const why = isUnreachable(err) ? 'unreachable' : err instanceof UnauthorizedError ? 'refused' : 'other';
    return { error: oneLine(err), why };
  }
}

/** The deletion brake as `ccm run` judges this listing, with the deletions of its window read back. */
async function deletionBrakeCheck(
  brake: { http: KubeTransport; setting: ReturnType<typeof brakeSetting>; now: Date },
  nodes: readonly SlimNode[],
  instances: readonly Instance[],
  provider: Provider,
  secretRef: { namespace: string; name: string } | undefined,
): Promise<CheckResult> {
  const { options, deletionGracePeriodMs } = brake.setting;
  // The record's clock is the API server's: its times are judged against the server's own now.
  const recent = await readDeletionRecord(brake.http).then(
    (record) => ({ deletions: record.deletions, serverNow: record.serverNow }),
    (err: Error) => ({ deletions: [], error: oneLine(err) }),
  );
  const now = 'serverNow' in recent ? recent.serverNow : brake.now.getTime();
  const view = viewOf({ instances: [...instances] }, nodes);
  const { managed, missing } = managedNodes(
    nodes,
    view,
    provider.providerIdScheme,
    new Date(now),
    deletionGracePeriodMs,
  );
  const verdict = brakeVerdict({
    managed,
    missing,
    deletions: recent.deletions,
    ...('error' in recent ? { deletionsError: recent.error } : {}),
    now,
    options,
  });
  return checkDeletionBrake(verdict, options, secretRef);
}

/** Resources without a namespace: "(all namespaces)" would say something false of them. */
const CLUSTER_SCOPED = new Set([
  'nodes',
  'namespaces',
  'tokenreviews',
  'subjectaccessreviews',
  'clusterroles',
]);

function describe(r: AccessRequest): string {
  const resource = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const name = r.name ? ` ${r.name}` : '';
  const ns = r.namespace
    ? ` in ${r.namespace}`
    : r.name || CLUSTER_SCOPED.has(r.resource)
      ? ''
      : ' (all namespaces)';
  return `${r.verb} ${resource}${name}${ns}`;
}

/** One SubjectAccessReview per verb of every rule `ccm manifests` grants, and the Secret verbs it must not have. */
async function reviewAccess(
  http: KubeTransport,
  sa: { namespace: string; name: string },
  input: DoctorInput,
  secretRef: { namespace: string; name: string } | undefined,
): Promise<{ needed: AccessVerdict[]; secrets: AccessVerdict[] }> {
  const needed: AccessRequest[] = [];
  for (const rule of clusterRules(selectControllers(input.controllers).enabled)) {
    for (const group of rule.apiGroups)
      for (const full of rule.resources)
        for (const verb of rule.verbs)
          for (const name of rule.resourceNames ?? [undefined]) {
            const [resource = '', subresource] = full.split('/');
            needed.push({
              verb,
              group,
              resource,
              ...(subresource ? { subresource } : {}),
              ...(name ? { name } : {}),
            });
          }
  }
  const leases = { group: 'coordination.k8s.io', resource: 'leases', namespace: sa.namespace };
  needed.push(
    { ...leases, verb: 'create' },
    { ...leases, verb: 'get', name: input.lease },
    { ...leases, verb: 'update', name: input.lease },
  );
  if (selectControllers(input.controllers).enabled.includes('cloud-node-lifecycle')) {
    for (const rule of nodeDeletionsRules())
      for (const verb of rule.verbs)
        for (const name of rule.resourceNames ?? [undefined])
          needed.push({
            verb,
            group: '',
            resource: 'configmaps',
            namespace: NODE_DELETIONS_NAMESPACE,
            ...(name ? { name } : {}),
          });
  }
  if (secretRef) needed.push({ verb: 'get', group: '', resource: 'secrets', ...secretRef });
  const forbidden: AccessRequest[] = [
    ...['get', 'list', 'watch'].map((verb) => ({ verb, group: '', resource: 'secrets' })),
    ...(secretRef
      ? ['list', 'watch', 'update', 'patch', 'delete'].map((verb) => ({
          verb,
          group: '',
          resource: 'secrets',
          namespace: secretRef.namespace,
        }))
      : []),
  ];
  const review = (requests: AccessRequest[]) =>
    Promise.all(
      requests.map(async (r) => ({ what: describe(r), allowed: await serviceAccountMay(http, sa, r) })),
    );
  const [neededVerdicts, secretVerdicts] = await Promise.all([review(needed), review(forbidden)]);
  return { needed: neededVerdicts, secrets: secretVerdicts };
}

function optional<T>(value: T | undefined): T[] {
  return value === undefined ? [] : [value];
}
