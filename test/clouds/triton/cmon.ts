/**
 * A CMON (Triton Container Monitor) simulator, written from TritonDataCenter/triton-cmon at bb7e727
 * (docs/README.md; lib/app.js, lib/common.js, lib/endpoints/discover.js, lib/endpoints/metrics.js,
 * lib/endpoints/_ping.js, lib/updater.js) and, for what `/metrics` carries,
 * TritonDataCenter/triton-cmon-agent (cmon-metrics.ts).
 *
 * CMON is built on one or more CloudAPI simulators (server.ts) of one data centre, each an account:
 * the accounts, their SSH keys and their machines (with their tags and states) are read from those
 * simulators at each request, so what CloudAPI holds is what CMON discovers, as if CMON's
 * changefeed-fed cache (lib/app.js, lib/updater.js) were always caught up. Starting it adds a `cmon`
 * entry to each CloudAPI's ListServices.
 *
 * It listens over HTTPS only, as CMON does (lib/app.js serverOpts: the certificate and key of
 * /data/tls, `requestCert: true`, `rejectUnauthorized: false`: any client certificate completes the
 * handshake, and lib/common.js authenticationHandler decides). Its own certificate names
 * cmon.<dc>.<suffix> and *.cmon.<dc>.<suffix>; `ca` is its PEM, for a client's ca_file.
 *
 * Not simulated: operators and compute nodes (`/v1/gz/discover` is 404 here, a CN's `/metrics`),
 * sub-users in the account's `administrator` role (authenticationHandler's mahi /roles fallback: a
 * sub-user's key is refused here), poseidon's manta groups, throttling, gzip.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import sshpk from 'sshpk';
import { FaultList, type FaultRule, type Listening, listen } from '../http-core.js';
import { instanceMetrics } from './cmon-metrics.js';
import type { SimMachine, TritonSim } from './server.js';

const require = createRequire(import.meta.url);
const tritonTags = require('triton-tags') as {
  validateTritonTag(key: string, value: unknown): string | null;
};

/** lib/common.js UUID_RGX: a Host prefix CMON routes to an instance. */
const UUID_RGX = /^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;
const GROUPS_TAG = 'triton.cmon.groups';
/** The GET routes (lib/endpoints/_ping.js, discover.js, metrics.js); /v1/gz/discover is not simulated. */
const ROUTES = [
  { name: 'ping', path: /^(\/v[^/]+)?\/_ping$/ },
  { name: 'discover', path: /^\/v1\/discover$/ },
  { name: 'metrics', path: /^\/metrics$/ },
] as const;

export interface CmonSimOptions {
  /** CMON is named cmon.<dc>.<suffix> (docs/README.md: cmon.<az>.triton.zone). Default triton.test. */
  suffix?: string;
  /**
   * CMON's discoverIncludeStopped (docs/README.md "CMON Configuration File"; lib/app.js _fetchVm and
   * lib/updater.js _handleCfChunk): stopped instances are cached, and so discovered, too. Default false.
   */
  includeStopped?: boolean;
  /**
   * CMON's own certificate. `sans` (default): one an operator installs, naming cmon.<dc>.<suffix> and
   * *.cmon.<dc>.<suffix> in its subjectAltName. `cn-only`: the one CMON makes for itself when none is
   * installed (triton-cmon boot/setup.sh setup_tls_certificate, bb7e727: `openssl req -x509 -nodes
   * -subj "/CN=$DEFAULT_HOSTNAME" … -newkey ec … -days 365`): its name in the CN only, no
   * subjectAltName, which Go's TLS (Prometheus) refuses and Node accepts.
   */
  certificate?: 'sans' | 'cn-only';
}

export interface CmonFault extends FaultRule {
  /** Matched against the Host header's first label ("cmon" or an instance's id). */
  hostPrefix?: string;
  status: number;
  body?: string;
  contentType?: string;
}

export interface CmonRequest {
  method: string;
  path: string;
  query: string;
  host: string;
  status: number;
  /** The authenticated account's login. */
  account?: string;
  /** Why CMON refused it, as CMON logs it (the client sees only the status). */
  reason?: string;
}

/** One cached instance, lib/common.js mapVm's object plus cacheVm's cached_date. */
interface CachedVm {
  groups: string[];
  manta_group?: string;
  has_core_tag: boolean;
  server_uuid: string;
  source: string;
  vm_alias?: string;
  vm_brand?: string;
  vm_image_uuid?: string;
  vm_owner_uuid: string;
  vm_uuid: string;
  vm_state: string;
  cached_date: number;
}

/** An error CMON answers: restify 4 (triton-cmon's package.json pins 4.2.0) sends {code, message}. */
class CmonError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    /** What CMON logs (req.log.error in lib/common.js), kept in the request log. */
    readonly reason: string,
    message = '',
  ) {
    super(message);
  }
}
const unauthorized = (reason: string) => new CmonError(401, 'Unauthorized', reason);
const notFound = (reason: string) => new CmonError(404, 'NotFound', reason);

interface Account {
  id: string;
  login: string;
  keys: Map<string, sshpk.Key>;
}

export class CmonSim {
  readonly clouds: readonly TritonSim[];
  readonly datacenter: string;
  /** cmon.<dc>.<suffix>: the discovery endpoint's name, and the DNS suffix of every instance's. */
  readonly host: string;
  readonly includeStopped: boolean;
  readonly requests: CmonRequest[] = [];
  /** The PEM of CMON's own (self-signed) certificate, for a client's CA. */
  ca = '';
  port = 0;
  private readonly certificate: 'sans' | 'cn-only';
  private readonly injected = new FaultList<CmonFault>(Number.POSITIVE_INFINITY);
  private listening?: Listening;

  constructor(clouds: TritonSim | readonly TritonSim[], options: CmonSimOptions = {}) {
    this.clouds = Array.isArray(clouds) ? clouds : [clouds as TritonSim];
    const first = this.clouds[0];
    if (!first) throw new Error('CMON needs a CloudAPI simulator');
    if (this.clouds.some((c) => c.datacenter !== first.datacenter)) {
      throw new Error('one CMON serves one data centre: its CloudAPI simulators must share it');
    }
    this.datacenter = first.datacenter;
    this.host = `cmon.${this.datacenter}.${options.suffix ?? 'triton.test'}`;
    this.includeStopped = options.includeStopped ?? false;
    this.certificate = options.certificate ?? 'sans';
  }

  /** https://cmon.<dc>.<suffix>:<port>, as CloudAPI's ListServices names it. */
  get url(): string {
    return `https://${this.host}:${this.port}`;
  }

  /** The name Prometheus scrapes an instance at: <vm_uuid>.cmon.<dc>.<suffix>. */
  instanceHost(id: string): string {
    return `${id}.${this.host}`;
  }

  /** The injected faults, with their counts. */
  get faults() {
    return this.injected.entries;
  }

  /** Answers matching requests (after authentication and authorization) with this status instead. */
  fault(f: CmonFault): void {
    this.injected.add(f);
  }

  async start(): Promise<this> {
    const tls = serverCertificate(this.host, this.certificate);
    this.ca = tls.cert;
    this.listening = await listen(
      (req, res) => {
        try {
          this.handle(req, res);
        } catch (err) {
          // lib/common.js uncaughtHandler: 500 InternalError "Internal error".
          this.reply(
            req,
            res,
            500,
            { code: 'InternalError', message: 'Internal error' },
            {
              reason: (err as Error).message,
            },
          );
        }
      },
      { ...tls, requestCert: true, rejectUnauthorized: false },
    );
    this.listening.server.keepAliveTimeout = 1000;
    this.port = Number(new URL(this.listening.url).port);
    for (const cloud of this.clouds) cloud.services.cmon = this.url;
    return this;
  }

  async stop(): Promise<void> {
    for (const cloud of this.clouds) delete cloud.services.cmon;
    await this.listening?.close();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://cmon');
    const method = req.method ?? 'GET';
    let account: Account | undefined;
    try {
      // restify 4 routes first (an unknown path or a wrong method is answered before any handler);
      // a route runs the server.use handlers registered before it (lib/app.js: enforceHostHandler,
      // enforceSSLHandler (always TLS here), then /_ping, then authenticationHandler,
      // authorizationHandler, then the other routes).
      const route = ROUTES.find((r) => r.path.test(url.pathname));
      if (!route) throw new CmonError(404, 'ResourceNotFound', 'no route', `${url.pathname} does not exist`);
      if (method !== 'GET')
        throw new CmonError(405, 'MethodNotAllowed', 'wrong method', `${method} is not allowed`);
      const prefix = hostPrefix(req);
      if (route.name === 'ping') {
        // lib/endpoints/_ping.js: unauthenticated, plain "OK".
        this.reply(req, res, 200, 'OK', { contentType: 'text/plain; charset=utf-8' });
        return;
      }
      account = this.authenticate(req);
      this.authorize(account, prefix);
      const fault = this.injected.take(method, url.pathname, (f) => !f.hostPrefix || f.hostPrefix === prefix);
      if (fault) {
        this.reply(req, res, fault.status, fault.body ?? '', {
          account,
          contentType: fault.contentType ?? 'application/json',
          reason: 'injected fault',
        });
        return;
      }
      if (route.name === 'discover') {
        this.reply(req, res, 200, this.discover(account, url), { account });
      } else {
        // lib/endpoints/metrics.js fetchAndSendMetrics: content-type text/plain, cmon-agent's bytes.
        this.reply(req, res, 200, this.metrics(req), { account, contentType: 'text/plain' });
      }
    } catch (err) {
      if (!(err instanceof CmonError)) throw err;
      this.reply(
        req,
        res,
        err.status,
        { code: err.code, message: err.message },
        { account, reason: err.reason },
      );
    }
  }

  private reply(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    payload: unknown,
    { account, reason, contentType }: { account?: Account; reason?: string; contentType?: string } = {},
  ): void {
    const url = new URL(req.url ?? '/', 'https://cmon');
    this.requests.push({
      method: req.method ?? '',
      path: url.pathname,
      query: url.search,
      host: req.headers.host ?? '',
      status,
      ...(account ? { account: account.login } : {}),
      ...(reason ? { reason } : {}),
    });
    const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
    res.writeHead(status, {
      'content-type': contentType ?? 'application/json',
      'content-length': Buffer.byteLength(text),
      server: 'cmon',
      'x-request-id': randomUUID(),
    });
    res.end(text);
  }

  private accounts(): Account[] {
    return this.clouds.map((c) => c.account);
  }

  /**
   * lib/common.js authenticationHandler. No certificate: 401. The certificate's subject key's MD5
   * fingerprint names the account key, except for a "new-style" certificate (purpose joyentCmon, as
   * `triton profile cmon-certgen` makes): its expiry is checked (401 when outside its validity, sshpk
   * isExpired), and when it is not self-signed the key is the one whose MD5 fingerprint its issuer's
   * CN holds (401 when the CN is no MD5 fingerprint). An "old-style" certificate's expiry is ignored.
   * The subject's CN is the account login (mahi getAccount: unknown, 401); the key must be one of the
   * account's (401; the administrator-role fallback is not simulated) and must have signed the
   * certificate (401). The client proved it holds the subject key in the TLS handshake itself.
   */
  private authenticate(req: IncomingMessage): Account {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    if (!peer?.raw) throw unauthorized('no client certificate');
    const cert = sshpk.parseCertificate(peer.raw, 'x509');
    let keyId = cert.subjectKey.fingerprint('md5').toString('hex');
    if (cert.purposes?.includes('joyentCmon')) {
      if (cert.isExpired()) throw unauthorized('client certificate expired');
      if (!cert.subjects[0]?.equals(cert.issuer)) {
        let fingerprint: sshpk.Fingerprint | undefined;
        try {
          fingerprint = sshpk.parseFingerprint(cert.issuer.get('cn'));
        } catch {
          fingerprint = undefined;
        }
        if (fingerprint?.algorithm !== 'md5')
          throw unauthorized('client certificate issuer is no MD5 fingerprint');
        keyId = fingerprint.toString('hex');
      }
    }
    const login = cert.subjects[0]?.get('cn');
    const account = this.accounts().find((a) => a.login === login);
    if (!account) throw unauthorized(`no account ${String(login)}`);
    const key = account.keys.get(keyId);
    if (!key) throw unauthorized(`key ${keyId} not present on account`);
    if (!cert.isSignedByKey(key)) throw unauthorized(`certificate not signed by key ${keyId}`);
    return account;
  }

  /**
   * lib/common.js authorizationHandler: the base name (prefix "cmon") is open to every authenticated
   * account; an instance's name only to its owner. Another account's instance and an unknown one
   * are both 404: "to make it a bit harder to map existing accounts and vms, we intentionally return
   * a 404 instead of a 403 or 401" (docs/README.md's table lists a 403 "for a different user"; the
   * code has none on this path).
   */
  private authorize(account: Account, prefix: string): void {
    if (prefix === 'cmon') return;
    if (!this.cached().some((vm) => vm.vm_owner_uuid === account.id && vm.vm_uuid === prefix)) {
      const exists = this.cached().some((vm) => vm.vm_uuid === prefix);
      throw notFound(exists ? "another account's instance" : 'instance not in cache');
    }
  }

  /**
   * The instances CMON's cache holds, built as lib/updater.js and lib/common.js mapVm/cacheVm build
   * it: running ones (and stopped ones with includeStopped, lib/app.js _fetchVm), NAT zones
   * (smartdc_role=nat) left out, `groups` the triton.cmon.groups tag split on commas.
   */
  private cached(): CachedVm[] {
    const vms: CachedVm[] = [];
    for (const cloud of this.clouds) {
      for (const m of cloud.machines.values()) {
        const vm = cacheEntry(cloud.account.id, m, this.includeStopped);
        if (vm) vms.push(vm);
      }
    }
    return vms;
  }

  /**
   * lib/endpoints/discover.js apiGetContainers. `groups`, when given, is validated as the
   * triton.cmon.groups tag is (triton-tags 1.4.0, the version triton-cmon pins): invalid is 400
   * BadRequest 'invalid "groups":<reason>'. An instance matches when it has any of the groups. The
   * answer is the cache's objects themselves (the narrower objects apiGetContainers builds are never
   * sent), so each carries every field of mapVm plus cached_date.
   */
  private discover(account: Account, url: URL): { containers: CachedVm[] } {
    const given = url.searchParams.getAll('groups');
    let wanted: string[] | undefined;
    if (given.length > 0) {
      // restify's queryParser hands a repeated parameter over as an array, which is no string.
      const value = given.length === 1 ? given[0] : given;
      const problem = tritonTags.validateTritonTag(GROUPS_TAG, value);
      if (problem) throw new CmonError(400, 'BadRequest', problem, `invalid "groups":${problem}`);
      wanted = (value as string).split(',');
    }
    const mine = this.cached().filter((vm) => vm.vm_owner_uuid === account.id);
    return {
      containers: wanted ? mine.filter((vm) => wanted.some((g) => vm.groups.includes(g))) : mine,
    };
  }

  /**
   * lib/endpoints/metrics.js apiGetMetrics: the instance is the Host's first label, as sent (not
   * lower-cased, unlike the authorization's); not in the cache: 404; cached but not running (a
   * stopped one, with includeStopped): 404, so that Prometheus' `up` is 0. Else cmon-agent's text.
   */
  private metrics(req: IncomingMessage): string {
    const target = String(req.headers.host).split('.')[0] ?? '';
    const vm = this.cached().find((v) => v.vm_uuid === target);
    if (!vm) throw notFound('target not in cache');
    if (vm.vm_state !== 'running') throw notFound('not calling cmon-agent because VM is not running');
    const cloud = this.clouds.find((c) => c.account.id === vm.vm_owner_uuid);
    return instanceMetrics(cloud?.machine(vm.vm_uuid) as SimMachine);
  }
}

/**
 * lib/common.js enforceHostHandler: no Host, or a first label (lower-cased) neither "cmon" nor a
 * UUID, is 404 before anything else, certificate or not. The rest of the name is not checked.
 */
function hostPrefix(req: IncomingMessage): string {
  const host = req.headers.host;
  if (!host) throw notFound('no Host header');
  const prefix = host.toLowerCase().split('.')[0] ?? '';
  if (prefix !== 'cmon' && !UUID_RGX.test(prefix))
    throw notFound(`Host ${host} is neither cmon.* nor <uuid>.*`);
  return prefix;
}

/** lib/common.js mapVm + cacheVm for one CloudAPI machine, or undefined when CMON would not cache it. */
function cacheEntry(owner: string, m: SimMachine, includeStopped: boolean): CachedVm | undefined {
  if (!(m.state === 'running' || (includeStopped && m.state === 'stopped'))) return undefined;
  const tags = m.tags;
  if (tags.smartdc_role === 'nat') return undefined;
  const groupsTag = tags[GROUPS_TAG];
  // `cmon_groups_str && cmon_groups_str.length > 0`: a number or boolean value has no length.
  const groups = typeof groupsTag === 'string' && groupsTag.length > 0 ? groupsTag.split(',') : [];
  const mantaRole = tags.manta_role;
  return {
    groups,
    ...(mantaRole !== undefined ? { manta_group: String(mantaRole) } : {}),
    has_core_tag: Boolean(tags.smartdc_role || tags.manta_role),
    server_uuid: m.compute_node,
    source: 'Bootstrapper',
    vm_alias: m.name,
    vm_brand: m.brand,
    vm_image_uuid: m.image,
    vm_owner_uuid: owner,
    vm_uuid: m.id,
    vm_state: m.state,
    cached_date: Date.parse(m.updated),
  };
}

/**
 * CMON's own certificate (self-signed, P-256, one day): naming it and every instance under it in its
 * subjectAltName, or (`cn-only`) as boot/setup.sh makes it, the name in the CN alone.
 */
function serverCertificate(host: string, kind: 'sans' | 'cn-only'): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ccm-cmon-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${host}`,
        ...(kind === 'sans' ? ['-addext', `subjectAltName=DNS:${host},DNS:*.${host}`] : []),
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
