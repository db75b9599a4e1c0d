import { isObject, unexpectedAnswer } from '../answer.js';
import { InvalidConfigError, NotFoundError, RetryableError, UnauthorizedError } from '../errors.js';
import { HttpClient, type HttpClientOptions } from '../http.js';
import { defaultTransport, fetchTransport } from '../http-transport.js';
import type { TakeToken } from '../types.js';
import type { RequestSigner } from './signer.js';

/**
 * CloudAPI (TritonDataCenter/sdc-cloudapi docs/index.md) over the shared HTTP client: HTTP Signature
 * auth on every attempt, CloudAPI's own error codes, offset/limit pagination.
 */

/** A machine as ListMachines / GetMachine return it (the fields ccm reads). */
export interface Machine {
  id: string;
  name: string;
  state: string;
  brand?: string;
  package?: string;
  ips?: string[];
  primaryIp?: string;
  tags?: Record<string, string | number | boolean>;
}

export interface Account {
  id: string;
  login: string;
  triton_cns_enabled?: boolean;
}

export type Tags = Record<string, string | number | boolean>;

export interface ListOptions {
  /**
   * Also list `failed` machines and destroyed ones whose history is kept (state `deleted`).
   * Without it CloudAPI lists neither (sdc-cloudapi lib/machines.js getListOptions sets state
   * "active", which sdc-vmapi lib/apis/moray.js turns into "not destroyed, not failed");
   * docs/index.md ListMachines: "tombstone: Include destroyed and failed instances".
   */
  tombstone?: boolean;
  /** Only machines with these tags (docs/index.md ListMachines `tag.$name`). */
  tags?: Record<string, string>;
}

/** A fabric network as GetFabricNetwork / UpdateFabricNetwork return it (the fields ccm reads). */
export interface FabricNetwork {
  id: string;
  subnet?: string;
  /** Static routes for hosts on this network: destination (IP or CIDR) → gateway IP. */
  routes?: Record<string, string>;
}

export interface TritonClientOptions {
  url: string;
  account: string;
  signer: RequestSigner;
  /** Values never shown in a message (key material, passphrase). */
  secrets: readonly string[];
  /** ListMachines page size, 2 to 1000; CloudAPI's maximum (and default) is 1000. */
  pageSize?: number;
  onRequest?: HttpClientOptions['onRequest'];
  /** The leader gate for requests that change the cloud (ProviderDeps.mayWrite). */
  mayWrite?: () => boolean;
  /** The shared request budget (ProviderDeps.takeToken): one token per request sent, retries and pages included. */
  takeToken?: TakeToken;
  /** The shared budget's hold on a rate-limit answer (ProviderDeps.rateLimited). */
  rateLimited?: (waitMs: number) => void;
  http?: Partial<HttpClientOptions>;
  /** This machine's clock (tests move it); the signed Date is taken from it. */
  clock?: () => number;
}

/**
 * One major version, as triton-go sends (its CloudAPIMajorVersion "8") and as sdc-cloudapi
 * docs/index.md recommends for SDKs: a later major may change what ccm reads without ccm knowing.
 * Every call ccm makes is the same in 8 and 9 (9.0.0 changed Roles, 9.1.0 CreateMachine).
 */
const API_VERSION = '~8';
/** http-signature's default clock skew, which CloudAPI's authorizationParser keeps. */
const CLOCK_SKEW_MS = 300_000;
const MAX_PAGE = 1000;
/** How many listings in a row may find a page boundary moved before ListMachines fails. */
const SWEEPS = 3;

export class TritonClient {
  private readonly http: HttpClient;
  /**
   * The same client without retries, for a write whose body is only right at the moment it was read
   * (UpdateFabricNetwork's whole routes object): its caller reads again before any second attempt.
   */
  private readonly once: HttpClient;
  private readonly login: string;
  private readonly pageSize: number;

  constructor(options: TritonClientOptions) {
    this.login = encodeURIComponent(options.account);
    // Pages overlap by one machine, so a page holds at least two.
    this.pageSize = Math.max(2, Math.min(options.pageSize ?? MAX_PAGE, MAX_PAGE));
    const { signer, account } = options;
    const clock = options.clock ?? Date.now;
    // CloudAPI's clock by the Date of its last answer, kept against the monotonic clock, so the
    // estimate survives this machine's wall clock being set right (or wrong) in between.
    let server: { ms: number; mono: number } | undefined;
    const skew = () => (server ? server.ms + (performance.now() - server.mono) - clock() : undefined);
    const { fetch: injected, transport, ...http } = options.http ?? {};
    const send = injected ? fetchTransport(injected) : (transport ?? defaultTransport());
    const httpOptions: HttpClientOptions = {
      baseUrl: options.url,
      userAgent: 'ccm (triton)',
      // 420 "Slow Down" is CloudAPI's throttling answer, 429 its newer one: both are rate limits.
      retryStatuses: [420, 429, 500, 502, 503, 504],
      secrets: () => options.secrets,
      onRequest: options.onRequest,
      ...(options.mayWrite ? { mayWrite: options.mayWrite } : {}),
      ...(options.takeToken ? { takeToken: options.takeToken } : {}),
      ...(options.rateLimited ? { onRateLimited: options.rateLimited } : {}),
      isNotFound: (body) => errorCode(body) === 'ResourceNotFound',
      describeError: (status, body) => describe(status, body, account, signer, skew()),
      authorize: async ({ headers }) => {
        // A fresh Date per attempt: CloudAPI refuses a Date more than 300 s away from its clock.
        // A request that would be refused for it is not sent.
        const off = skew();
        if (off !== undefined && Math.abs(off) > CLOCK_SKEW_MS + 1000) {
          throw new UnauthorizedError(
            `CloudAPI would refuse the request's Date, so ccm did not send it${clockAdvice(off, 'last answer')}`,
          );
        }
        const date = new Date(clock()).toUTCString();
        const { algorithm, signature } = await signer.sign(`date: ${date}`);
        headers.set('date', date);
        headers.set('accept-version', API_VERSION);
        headers.set(
          'authorization',
          `Signature keyId="${signer.keyId}",algorithm="${algorithm}",headers="date",signature="${signature}"`,
        );
      },
      ...http,
      transport: async (url, req, maxBytes) => {
        const res = await send(url, req, maxBytes);
        const date = Date.parse(res.headers.get('date') ?? '');
        // The Date header has whole seconds: the middle of its second is the best estimate.
        if (!Number.isNaN(date)) server = { ms: date + 500, mono: performance.now() };
        return res;
      },
    };
    this.http = new HttpClient(httpOptions);
    this.once = new HttpClient({ ...httpOptions, retries: 0 });
  }

  /** GetAccount: the cheap call that proves the credentials, and the account UUID CNS names use. */
  async getAccount(signal?: AbortSignal): Promise<Account> {
    const path = `/${this.login}`;
    const { body } = await this.http.get<Account>(path, { signal });
    if (!isObject(body) || typeof body.login !== 'string' || typeof body.id !== 'string')
      throw unexpectedAnswer(`GET ${path}`, 'the account (its login and id)', body);
    return body;
  }

  /**
   * ListServices: { name: url } of the data centre's services (cloudapi, docker, cmon, …), as
   * `triton profile cmon-certgen` reads it to find CMON.
   */
  async listServices(signal?: AbortSignal): Promise<Record<string, string>> {
    const path = `/${this.login}/services`;
    const { body } = await this.http.get<Record<string, string>>(path, { signal });
    if (!isObject(body)) throw unexpectedAnswer(`GET ${path}`, 'the services (name: URL)', body);
    return body;
  }

  /** ListDatacenters: { name: url }. */
  async listDatacenters(signal?: AbortSignal): Promise<Record<string, string>> {
    return (await this.http.get<Record<string, string>>(`/${this.login}/datacenters`, { signal })).body;
  }

  /**
   * Every machine, never a partial list. CloudAPI pages by offset over VMAPI's order (uuid,
   * descending: sdc-vmapi lib/apis/moray.js; CloudAPI passes no sort), and `x-resource-count` is
   * the page's length, not a total (sdc-cloudapi lib/machines.js): nothing counts the whole. A
   * machine destroyed on an earlier page while the listing is read shifts the rest back, so the
   * first machine of the next page would be skipped. Each next page therefore starts at the last
   * machine of the one before: finding it again proves nothing moved back across that boundary
   * (a machine created meanwhile only shifts the rest on, seen twice and counted once). A boundary
   * that moved restarts the sweep; three such sweeps in a row are a RetryableError, and so is any
   * failed page. The listing ends at a page shorter than the limit the server applied.
   */
  async listMachines(signal?: AbortSignal, options: ListOptions = {}): Promise<Machine[]> {
    for (let sweep = 1; ; sweep++) {
      const machines = await this.sweepMachines(signal, options);
      if (machines) return machines;
      if (sweep === SWEEPS) {
        throw new RetryableError(
          `ListMachines: machines were destroyed while each of ${SWEEPS} listings was read, so a page boundary moved every time; trying again later`,
          1000,
        );
      }
    }
  }

  /** One sweep of overlapping pages; undefined when a page boundary moved (a machine may be missed). */
  private async sweepMachines(
    signal: AbortSignal | undefined,
    options: ListOptions,
  ): Promise<Machine[] | undefined> {
    const seen = new Map<string, Machine>();
    let anchor: string | undefined;
    // Machines created meanwhile can fill a page with machines seen before, but not page after page.
    let stale = 0;
    for (let offset = 0; ; ) {
      const res = await this.http.get<Machine[]>(`/${this.login}/machines`, {
        query: {
          offset,
          limit: this.pageSize,
          ...(options.tombstone ? { tombstone: 'true' } : {}),
          ...Object.fromEntries(Object.entries(options.tags ?? {}).map(([k, v]) => [`tag.${k}`, v])),
        },
        signal,
      });
      const page = res.body;
      if (!Array.isArray(page) || !page.every((m) => isObject(m) && typeof m.id === 'string'))
        throw unexpectedAnswer(`GET /${this.login}/machines`, 'a list of machines', page);
      if (anchor !== undefined && !page.some((m) => m.id === anchor)) return undefined;
      const before = seen.size;
      for (const machine of page) seen.set(machine.id, machine);
      const limit = headerNumber(res.headers.get('x-query-limit')) ?? this.pageSize;
      if (page.length < limit) return [...seen.values()];
      stale = seen.size === before ? stale + 1 : 0;
      if (stale === 3) {
        throw new RetryableError(
          `ListMachines returned the same machines again at offset ${offset}; the listing did not advance`,
          1000,
        );
      }
      anchor = page[page.length - 1]?.id;
      offset += page.length - 1;
    }
  }

  async getMachine(id: string, signal?: AbortSignal): Promise<Machine> {
    return (await this.http.get<Machine>(`/${this.login}/machines/${encodeURIComponent(id)}`, { signal }))
      .body;
  }

  async listMachineTags(id: string, signal?: AbortSignal): Promise<Tags> {
    const res = await this.http.get<Tags>(`/${this.login}/machines/${encodeURIComponent(id)}/tags`, {
      signal,
    });
    return res.body ?? {};
  }

  /** AddMachineTags: sets the given tags, leaves every other tag as it is. Asynchronous in CloudAPI. */
  async addMachineTags(id: string, tags: Tags, signal?: AbortSignal): Promise<void> {
    try {
      await this.http.post(`/${this.login}/machines/${encodeURIComponent(id)}/tags`, tags, { signal });
    } catch (err) {
      // A refused tag write names the machine: the reason may lie in a tag someone else put there.
      if (err instanceof InvalidConfigError) err.message = `AddMachineTags of machine ${id}: ${err.message}`;
      throw err;
    }
  }

  private fabricNetworkPath(vlan: number, id: string): string {
    return `/${this.login}/fabrics/default/vlans/${vlan}/networks/${encodeURIComponent(id)}`;
  }

  /** GetFabricNetwork (GET /:login/fabrics/default/vlans/:vlan_id/networks/:id). */
  async getFabricNetwork(vlan: number, id: string, signal?: AbortSignal): Promise<FabricNetwork> {
    const path = this.fabricNetworkPath(vlan, id);
    const { body } = await this.http.get<FabricNetwork>(path, { signal });
    if (!isObject(body) || typeof body.id !== 'string')
      throw unexpectedAnswer(`GET ${path}`, 'a fabric network', body);
    return body;
  }

  /**
   * UpdateFabricNetwork with `routes`: the network's whole routes object is replaced. Sent once, never
   * retried here: a retry would send the same body again, stale by then (another writer's change since
   * the read would be erased); the caller reads the network again and decides.
   */
  async setFabricNetworkRoutes(
    vlan: number,
    id: string,
    routes: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<void> {
    await this.once.request('PUT', this.fabricNetworkPath(vlan, id), { body: { routes }, signal });
  }

  /** DeleteMachineTag: one tag; a tag that is already gone is fine. */
  async deleteMachineTag(id: string, tag: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.http.delete(
        `/${this.login}/machines/${encodeURIComponent(id)}/tags/${encodeURIComponent(tag)}`,
        { signal },
      );
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }
}

function headerNumber(value: string | null): number | undefined {
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value);
}

function errorCode(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const code = (body as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function errorMessage(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const message = (body as { message?: unknown }).message;
  return typeof message === 'string' ? message : '';
}

/**
 * CloudAPI's answers where they say more than the status (sdc-cloudapi lib/authorization.js,
 * lib/auth.js): 400 InvalidHeader for an Authorization header it cannot parse or whose Date is
 * off (shown as it is, with this machine's clock measured against the Date of the answer), one 401
 * InvalidCredentials for an unknown account, user or key and a bad signature alike; 403
 * NotAuthorized for a sub-user whose roles do not allow the action; a destroyed
 * machine (410); throttling under any status.
 */
function describe(
  status: number,
  body: unknown,
  account: string,
  signer: RequestSigner,
  skewMs: number | undefined,
) {
  const code = errorCode(body);
  const message = errorMessage(body);
  // restify's throttle plugin, which CloudAPI mounts per endpoint (sdc-cloudapi lib/throttle.js),
  // answers 429 TooManyRequestsError in restify 4.3.3 (lib/plugins/throttle.js); RequestThrottled
  // (429, or 420 "Slow Down" in docs/index.md) is the older answer triton-go still looks for.
  if (code === 'RequestThrottled' || code === 'TooManyRequestsError') {
    return new RetryableError(
      `CloudAPI throttled the request (${status}${message ? `: ${message}` : ''}); slowing down`,
      5000,
    );
  }
  if (status === 410) {
    // sdc-cloudapi lib/machines.js get(): a destroyed machine is answered 410 with its record, state
    // "deleted". A 410 without that record (a proxy, another service) says nothing about the machine.
    return (body as { state?: unknown } | undefined)?.state === 'deleted'
      ? new NotFoundError(`the machine was destroyed (410 Gone)`)
      : new RetryableError(`CloudAPI answered 410 without the destroyed machine's record; not taken as gone`);
  }
  const user = signer.keyId.includes('/users/') ? signer.keyId.split('/')[3] : undefined;
  const who = user ? `account ${account} (user ${user})` : `account ${account}`;
  if (status === 400 && code === 'InvalidHeader') {
    return new UnauthorizedError(
      `CloudAPI refused the signed request of key ${signer.fingerprint} (400 InvalidHeader: ${message || 'no message'})${clockAdvice(skewMs)}`,
    );
  }
  if (status === 409 && code === 'ValidationFailed') {
    // sdc-cloudapi lib/errors.js ExposedSDCError keeps VMAPI's `errors`, where the reason is (a tag
    // node-triton-tags refuses, sdc-vmapi lib/endpoints/metadata.js): the message alone does not say.
    const reasons = validationReasons(body);
    return new InvalidConfigError(
      `CloudAPI refused the request (409 ValidationFailed: ${message || 'no message'}${reasons ? `: ${reasons}` : ''})`,
    );
  }
  if (status === 403 && code === 'NotAuthorized' && user) {
    // sdc-cloudapi lib/auth.js authorize: "You do not have permission to access <path> (<action>)"
    // when no policy of the sub-user's active roles allows the action (the route's name).
    const action = /\(([a-z]+)\)\s*$/.exec(message)?.[1];
    return new UnauthorizedError(
      `CloudAPI refused ${action ? `action "${action}"` : 'the request'} to user ${user} of account ${account} (403 NotAuthorized: ${message || 'no message'}): the credentials are valid, but no policy of the user's default roles allows ${action ? 'it' : 'this'}; give user ${user} a default role whose policy says "CAN ${action ?? '<action>'}" (ccm needs ${NEEDED_ACTIONS})`,
    );
  }
  if (
    status === 401 &&
    code === 'InvalidCredentials' &&
    /^Invalid authorization credentials/i.test(message)
  ) {
    return new UnauthorizedError(
      `CloudAPI refused key ${signer.fingerprint} for ${who} (401 InvalidCredentials): it knows no such ${user ? 'account or user' : 'account'}, or the key is not registered for it; check TRITON_URL, TRITON_ACCOUNT${user ? ', TRITON_USER' : ''} and the key (triton key list)`,
    );
  }
  return undefined;
}

function validationReasons(body: unknown): string {
  const errors = isObject(body) ? (body as { errors?: unknown }).errors : undefined;
  if (!Array.isArray(errors)) return '';
  return errors
    .map((e) => (isObject(e) && typeof e.message === 'string' ? e.message : ''))
    .filter((m) => m !== '')
    .join('; ');
}

/** The CloudAPI actions (route names, as RBAC policies name them) ccm calls. */
const NEEDED_ACTIONS =
  'getaccount, listmachines, getmachine, listdatacenters unless TRITON_DATACENTER is set, and for CNS load balancing and CMON groups listmachinetags, addmachinetags, deletemachinetag';

/** Whether this machine's clock is outside CloudAPI's window, by the Date of CloudAPI's own answer. */
function clockAdvice(skewMs: number | undefined, answer = 'answer'): string {
  if (skewMs === undefined || Math.abs(skewMs) < CLOCK_SKEW_MS - 1000) return '';
  const seconds = Math.round(Math.abs(skewMs) / 1000);
  return `; this machine's clock is ${seconds} s ${skewMs > 0 ? 'behind' : 'ahead of'} CloudAPI's (the Date of its ${answer}), more than the 300 s it allows: set the clock (NTP)`;
}
