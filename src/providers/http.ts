import { setTimeout as delay } from 'node:timers/promises';
import { nodeHttp } from '../node-modules.js';
import { encryptedOrLocal } from '../plain-http.js';
import { ProxyError } from '../proxy.js';
import {
  InvalidConfigError,
  isProviderError,
  NotFoundError,
  type ProviderError,
  RetryableError,
  UnauthorizedError,
  UnreachableError,
} from './errors.js';
import {
  defaultTransport,
  fetchTransport,
  HeaderMap,
  type RequestHeaders,
  ResponseTooLarge,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from './http-transport.js';
import type { TakeToken } from './types.js';

/**
 * The one HTTP client every cloud provider uses: JSON in and out, a timeout per attempt, retries with
 * backoff that honour the cloud's rate-limit hints, typed errors, and no secret in any message.
 */

export interface AuthorizeRequest {
  method: string;
  url: URL;
  /** This attempt's headers: set the auth headers here. */
  headers: RequestHeaders;
  body?: string;
}

export interface HttpCallInfo {
  method: string;
  /** Path and query, redacted. */
  path: string;
  status: number | 'error';
  attempt: number;
  durationMs: number;
}

export interface HttpClientOptions {
  /** API root, e.g. `https://api.digitalocean.com`; request paths are appended to it. */
  baseUrl: string;
  /** Per attempt. Default 30 s. */
  timeoutMs?: number;
  /** Retries after the first attempt. Default 4. */
  retries?: number;
  /** Default 429, 500, 502, 503, 504. 429 and 420 among them are rate limits, retried for every method. */
  retryStatuses?: readonly number[];
  /** Exponential backoff with jitter. Default 500 ms, doubling up to 30 s. */
  backoff?: { baseMs?: number; maxMs?: number };
  /** A longer server-requested wait is not slept through: RetryableError(retryAfterMs) instead. Default 60 s. */
  maxRetryAfterMs?: number;
  /** Runs before every attempt, so signatures over the Date header and refreshed tokens stay current. */
  authorize?: (req: AuthorizeRequest) => Promise<void> | void;
  /** Values to redact, asked for every message, so tokens obtained later are covered too. */
  secrets?: () => readonly string[];
  userAgent?: string;
  /**
   * Whether a 404 is this API's own "no such resource" answer (its error body), as opposed to a wrong
   * base path or a proxy's 404. Only then is it a NotFoundError, which callers may read as "gone";
   * without this option no 404 ever is.
   */
  isNotFound?: (body: unknown, res: TransportResponse) => boolean;
  /**
   * Maps an error answer of this API (status and parsed body) to a typed error with a clearer
   * message, e.g. a "key not registered" 401 or a 410 for a destroyed resource; undefined keeps the
   * default mapping. The message is redacted like every other.
   */
  describeError?: (status: number, body: unknown) => ProviderError | undefined;
  /** Called once per attempt (used to count cloud calls). */
  onRequest?: (info: HttpCallInfo) => void;
  /**
   * The leader gate (ProviderDeps.mayWrite): asked before each attempt of a request that is not a
   * GET or HEAD, after `authorize` (which may have waited for a token); false refuses it unsent.
   */
  mayWrite?: () => boolean;
  /**
   * The shared request budget (ProviderDeps.takeToken): waited for before each attempt; what it
   * resolves to is called once that attempt was answered or will not be sent.
   */
  takeToken?: TakeToken;
  /** A rate-limit answer (429, 420) and how long the cloud asked to wait (ProviderDeps.rateLimited). */
  onRateLimited?: (waitMs: number) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** How requests are sent; default: one node:https keep-alive pool for the process. */
  transport?: Transport;
  /** Tests: a fetch (a stub, or one with its own dispatcher) instead of the transport. */
  fetch?: typeof fetch;
  now?: () => number;
}

export type QueryValue = string | number | boolean | null | undefined;

export interface RequestOptions {
  /** Added to the path's own query; null/undefined values are left out, arrays repeat the key. */
  query?: Record<string, QueryValue | readonly QueryValue[]>;
  /** Objects are sent as JSON; strings and URLSearchParams as they are (give strings a content-type). */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Statuses besides 2xx that are an answer, not an error (Keystone's version document is a 300). */
  okStatuses?: readonly number[];
}

export interface HttpResponse<T> {
  status: number;
  headers: TransportResponse['headers'];
  /** Parsed JSON; undefined for an empty body. */
  body: T;
}

/**
 * The largest answer read, whole: a broken or hostile endpoint streaming without end would otherwise
 * grow the heap until the controller is killed, and again at every restart. The largest real answer,
 * a page of 200 droplets or 1,000 Nova servers, is a few MiB.
 */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
const READS = new Set(['GET', 'HEAD']);
const RATE_LIMITS = [429, 420];
const REDACTED = '[REDACTED]';
const SECRET_HEADERS = ['authorization', 'x-auth-token', 'x-subject-token'];
const SECRET_KEY = String.raw`[\w.-]*(?:token|password|secret)|authorization`;
const JSON_FIELD = new RegExp(String.raw`("(?:${SECRET_KEY})"\s*:\s*)"(?:[^"\\]|\\.)*"`, 'gi');
// A value ends where a query, a sentence or our own "path: message" format goes on.
const FORM_FIELD = new RegExp(String.raw`(^|[?&;\s])(${SECRET_KEY})=(?:[^&\s#"',;:)]|:(?!\s|$))*`, 'gi');
const HEADER_LINE =
  /\b(authorization|x-auth-token|x-subject-token)(\s*:\s*)["']?(?:(?:bearer|basic|signature)\s+)?[^\s)]+/gi;
/** The user name and password of a URL (a proxy's, `http://user:pass@proxy:3128`). */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi;

/**
 * Replaces every secret (also URL- and JSON-encoded), auth header values, token / password / secret
 * fields of a query, form or JSON text, and the user name and password of a URL with `[REDACTED]`.
 */
export function redact(text: string, secrets: readonly string[] = []): string {
  const forms = secrets
    .filter((s) => s.length > 0)
    .flatMap((s) => [
      s,
      encodeURIComponent(s),
      new URLSearchParams({ s }).toString().slice(2),
      JSON.stringify(s).slice(1, -1),
    ]);
  // Longest first, so that a secret containing another one is replaced whole.
  for (const form of [...new Set(forms)].sort((a, b) => b.length - a.length)) {
    text = text.split(form).join(REDACTED);
  }
  return text
    .replace(JSON_FIELD, `$1"${REDACTED}"`)
    .replace(FORM_FIELD, `$1$2=${REDACTED}`)
    .replace(HEADER_LINE, `$1$2${REDACTED}`)
    .replace(URL_USERINFO, `$1${REDACTED}@`);
}

const statuses = new WeakMap<object, number>();

/** The HTTP status behind an error thrown by an HttpClient (e.g. to tell a 409 from a 422). */
export function httpStatus(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null ? statuses.get(err) : undefined;
}

let waitListener: ((what: string | undefined) => void) | undefined;
let waitNoticeMs = 3000;

/**
 * Tells `listener` once about each cloud request still unanswered after `afterMs` (the text says
 * what and for how long), and again with undefined when it ends. One-pass commands show it, so that a
 * cloud that never answers is not minutes of blank screen. Returns the function that stops it.
 */
export function onCloudWait(listener: (what: string | undefined) => void, afterMs = 3000): () => void {
  waitListener = listener;
  waitNoticeMs = afterMs;
  return () => {
    if (waitListener === listener) waitListener = undefined;
  };
}

export class HttpClient {
  /**
   * The budget's turn for one attempt. A caller that gives up while waiting is answered at once with
   * its abort; the turn, when it comes, is handed back unspent.
   */
  private async turn(caller: AbortSignal | undefined): Promise<((sent?: boolean) => void) | undefined> {
    const turn = this.options.takeToken?.();
    if (!turn || !caller) return turn;
    caller.throwIfAborted();
    let abort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      abort = () => reject(caller.reason);
      caller.addEventListener('abort', abort, { once: true });
    });
    try {
      return await Promise.race([turn, aborted]);
    } catch (err) {
      void turn.then((done) => done?.(false));
      throw err;
    } finally {
      if (abort) caller.removeEventListener('abort', abort);
    }
  }

  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly retryStatuses: readonly number[];
  private readonly maxRetryAfterMs: number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly transport: Transport;
  private readonly now: () => number;

  constructor(private readonly options: HttpClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    if (URL.canParse(this.base) && !encryptedOrLocal(new URL(this.base))) {
      throw new InvalidConfigError(
        `${new URL(this.base).origin} is plain http to another machine: the credentials would cross the network unencrypted; use its https URL`,
      );
    }
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retries = options.retries ?? 4;
    this.retryStatuses = options.retryStatuses ?? [429, 500, 502, 503, 504];
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, { signal }));
    this.transport = options.fetch
      ? fetchTransport(options.fetch)
      : (options.transport ?? defaultTransport());
    this.now = options.now ?? Date.now;
  }

  get<T = unknown>(path: string, options?: Omit<RequestOptions, 'body'>): Promise<HttpResponse<T>> {
    return this.request<T>('GET', path, options);
  }
  post<T = unknown>(path: string, body?: unknown, options?: RequestOptions): Promise<HttpResponse<T>> {
    return this.request<T>('POST', path, { ...options, body });
  }
  put<T = unknown>(path: string, body?: unknown, options?: RequestOptions): Promise<HttpResponse<T>> {
    return this.request<T>('PUT', path, { ...options, body });
  }
  patch<T = unknown>(path: string, body?: unknown, options?: RequestOptions): Promise<HttpResponse<T>> {
    return this.request<T>('PATCH', path, { ...options, body });
  }
  delete<T = unknown>(path: string, options?: RequestOptions): Promise<HttpResponse<T>> {
    return this.request<T>('DELETE', path, options);
  }

  async request<T = unknown>(
    method: string,
    path: string,
    opts: RequestOptions = {},
  ): Promise<HttpResponse<T>> {
    method = method.toUpperCase();
    const url = this.url(path, opts.query);
    const listener = waitListener;
    if (!listener) return this.attempts<T>(method, url, opts);
    let shown = false;
    const notice = setTimeout(() => {
      shown = true;
      listener(
        `waiting for the cloud at ${url.origin} (${method} ${url.pathname}): up to ${this.timeoutMs / 1000} s an attempt, ${this.retries + 1} attempts`,
      );
    }, waitNoticeMs);
    try {
      return await this.attempts<T>(method, url, opts);
    } finally {
      clearTimeout(notice);
      if (shown) listener(undefined);
    }
  }

  private async attempts<T>(method: string, url: URL, opts: RequestOptions): Promise<HttpResponse<T>> {
    const { body, contentType } = encodeBody(opts.body);
    const caller = opts.signal;
    for (let attempt = 1; ; attempt++) {
      let headers: HeaderMap;
      try {
        headers = new HeaderMap(opts.headers);
      } catch (err) {
        // A line break in a header value would start another header: nothing is sent.
        throw new InvalidConfigError(`${method} ${url.pathname}: ${(err as Error).message}`);
      }
      if (!headers.has('accept')) headers.set('accept', 'application/json');
      if (contentType && !headers.has('content-type')) headers.set('content-type', contentType);
      headers.set('user-agent', this.options.userAgent ?? 'ccm');
      // The budget first: the leader gate below is asked after any wait for it. The budget is told
      // when the request was answered (or never sent), however it ends: a cloud's window counts it
      // from its arrival, which is no later than that.
      const answered = await this.turn(caller);
      let started: number;
      let refusal: (() => Error | undefined) | undefined;
      let sent: Awaited<ReturnType<HttpClient['send']>>;
      let sending = false;
      try {
        // The caller gave up while this waited for its turn: the turn is handed back unspent.
        if (caller?.aborted) throw caller.reason;
        try {
          await this.options.authorize?.({ method, url, headers, body });
        } catch (err) {
          throw this.unusable(err, `${method} ${url.pathname}${url.search}`, headers);
        }
        refusal = READS.has(method) ? undefined : () => this.notLeader(method, url);
        const refused = refusal?.();
        if (refused) throw refused;

        started = this.now();
        const signal = AbortSignal.any([AbortSignal.timeout(this.timeoutMs), ...(caller ? [caller] : [])]);
        sending = true;
        sent = await this.send(url, {
          method,
          headers,
          body,
          signal,
          ...(refusal ? { refusal } : {}),
        });
      } finally {
        answered?.(sending);
      }
      const { res, text, error } = sent;
      // Refused once its connection was up (the Lease lost meanwhile): nothing was sent.
      if (error instanceof NotLeaderRefusal) throw error;
      const secrets = this.secrets(headers, res);
      const shown = redact(url.pathname + url.search, secrets);
      const status = res?.status ?? 'error';
      this.options.onRequest?.({ method, path: shown, status, attempt, durationMs: this.now() - started });
      if (caller?.aborted) throw caller.reason;
      if (error !== undefined && !isTransportError(error)) {
        throw this.unusable(error, `${method} ${shown}`, headers);
      }
      if (res && ((res.status >= 200 && res.status < 300) || opts.okStatuses?.includes(res.status))) {
        return { status: res.status, headers: res.headers, body: parse<T>(`${method} ${shown}`, res, text) };
      }

      const wait = res && this.retryAfter(res);
      const what = res ? describeResponse(res, text, secrets) : describeFailure(error, this.timeoutMs);
      const fail = (suffix: string, retryAfterMs: number) =>
        (res && this.described(res, text, secrets)) ??
        this.toError(
          res?.status,
          redact(`${method} ${shown}: ${what}${suffix}`, secrets),
          retryAfterMs,
          res && this.isOwnNotFound(res, text),
          error instanceof Error && error.cause instanceof ProxyError,
        );

      const code = res?.status;
      if (code !== undefined && RATE_LIMITS.includes(code))
        this.options.onRateLimited?.(wait ?? this.backoff(attempt));
      const rateLimited =
        code !== undefined && RATE_LIMITS.includes(code) && this.retryStatuses.includes(code);
      // A 5xx or a lost connection on a POST may have created something: only rate limits are safe to repeat.
      // A name that does not resolve or a certificate that is refused stays so: asking again only waits.
      const transient =
        IDEMPOTENT.has(method) &&
        (code === undefined ? !isLasting(error) : this.retryStatuses.includes(code));
      if (!(rateLimited || transient) || attempt > this.retries) {
        throw fail(attempt > 1 ? `, gave up after ${attempt} attempts` : '', wait ?? 0);
      }
      if (wait !== undefined && wait > this.maxRetryAfterMs) {
        throw fail(`, the cloud asks to retry in ${Math.ceil(wait / 1000)} s`, wait);
      }
      try {
        await this.sleep(wait ?? this.backoff(attempt), caller);
      } catch (err) {
        throw caller?.aborted ? caller.reason : err;
      }
    }
  }

  /** The leader gate's answer for a request that changes the cloud. */
  private notLeader(method: string, url: URL): RetryableError | undefined {
    if (this.options.mayWrite?.() !== false) return undefined;
    return new NotLeaderRefusal(
      `${method} ${redact(url.pathname, this.options.secrets?.())} refused: this replica is not the leader`,
    );
  }

  private async send(
    url: URL,
    init: TransportRequest,
  ): Promise<{ res?: TransportResponse; text: string; error?: unknown }> {
    try {
      // Redirects are not followed: they would carry X-Auth-Token along to another host.
      const res = await this.transport(url, init, MAX_RESPONSE_BYTES);
      return { res, text: res.text };
    } catch (error) {
      if (error instanceof ResponseTooLarge) {
        return {
          text: '',
          error: new InvalidConfigError(
            `${init.method} ${url.pathname}: the answer is larger than ${MAX_RESPONSE_BYTES / 1024 ** 2} MiB, ccm stopped reading it; check the API URL`,
          ),
        };
      }
      return { text: '', error };
    }
  }

  private url(path: string, query: RequestOptions['query']): URL {
    // Absolute URLs are the pagination links clouds hand out (DigitalOcean links.pages.next, OpenStack
    // *_links). They get our credentials, so only links to the configured API origin are followed.
    let url: URL;
    if (/^[a-z][a-z0-9+.-]*:/i.test(path)) {
      url = new URL(path);
      const base = new URL(this.base);
      if (url.origin !== base.origin) {
        throw new InvalidConfigError(
          `the cloud handed out a link to ${url.protocol}//${url.host}, not the configured API ${base.origin}; not followed (check the API URL)`,
        );
      }
    } else {
      try {
        refuseUnsafePath(path);
      } catch (err) {
        throw new InvalidConfigError(redact((err as Error).message, this.options.secrets?.() ?? []));
      }
      url = new URL(`${this.base}/${path.replace(/^\/+/, '')}`);
    }
    for (const [key, value] of Object.entries(query ?? {})) {
      for (const v of Array.isArray(value) ? value : [value]) {
        if (v !== undefined && v !== null) url.searchParams.append(key, String(v));
      }
    }
    return url;
  }

  /** This client's secrets plus the credentials in this attempt's request and response headers. */
  private secrets(headers: RequestHeaders, res?: TransportResponse): string[] {
    const values = SECRET_HEADERS.flatMap((name) => [headers.get(name), res?.headers.get(name)]);
    return [...(this.options.secrets?.() ?? []), ...values.flatMap(headerSecrets)];
  }

  /** A request that could not be built or sent (a failed authorize, a bad header value): no retry. */
  private unusable(err: unknown, where: string, headers: RequestHeaders): Error {
    if (isProviderError(err)) return err;
    const reason = err instanceof Error ? err.message : String(err);
    return new InvalidConfigError(redact(`${where}: ${reason}`, this.secrets(headers)));
  }

  /**
   * Server-requested wait: Retry-After (seconds or HTTP-date); on a rate-limit answer without it,
   * X-Retry-After (seconds: OpenStack's rate limit middleware, sapcc/openstack-rate-limit-middleware
   * rate_limit/response.py, which names it after Swift's) or DigitalOcean's ratelimit-reset on a 429.
   */
  private retryAfter(res: TransportResponse): number | undefined {
    const header = res.headers.get('retry-after')?.trim();
    if (header && /^\d+$/.test(header)) return Number(header) * 1000;
    if (header && !Number.isNaN(Date.parse(header))) return Math.max(0, Date.parse(header) - this.now());
    const seconds = res.headers.get('x-retry-after')?.trim();
    if (RATE_LIMITS.includes(res.status) && seconds && /^\d+$/.test(seconds)) return Number(seconds) * 1000;
    const reset = res.headers.get('ratelimit-reset')?.trim();
    if (res.status !== 429 || !reset || !/^\d+$/.test(reset)) return undefined;
    const ms = Number(reset) * 1000 - this.now();
    // A reset in the past (clock skew) says nothing: back off instead.
    return ms > 0 ? ms : undefined;
  }

  private isOwnNotFound(res: TransportResponse, text: string): boolean {
    if (res.status !== 404 || !this.options.isNotFound) return false;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return this.options.isNotFound(body, res);
  }

  private described(res: TransportResponse, text: string, secrets: string[]): ProviderError | undefined {
    if (!this.options.describeError) return undefined;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const err = this.options.describeError(res.status, body);
    if (!err) return undefined;
    err.message = redact(err.message, secrets);
    statuses.set(err, res.status);
    return err;
  }

  private backoff(attempt: number): number {
    const { baseMs = 500, maxMs = 30_000 } = this.options.backoff ?? {};
    const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  private toError(
    code: number | undefined,
    message: string,
    retryAfterMs: number,
    ownNotFound = false,
    atProxy = false,
  ): ProviderError {
    let err: ProviderError;
    if (code === undefined) {
      err = new UnreachableError(
        atProxy
          ? message
          : `${message}: the cloud could not be reached; check the API URL, and this machine's DNS, network and proxy`,
        retryAfterMs,
      );
    } else if (code >= 500 || RATE_LIMITS.includes(code) || this.retryStatuses.includes(code)) {
      err = new RetryableError(message, retryAfterMs);
    } else if (code === 404 && ownNotFound) {
      err = new NotFoundError(message);
    } else if (code === 404) {
      // Not this API's own answer: a wrong base path or a proxy. Never evidence that anything is gone.
      err = new InvalidConfigError(`${message}; the answer is not the cloud API's own, check the API URL`);
    } else if (code === 401 || code === 403) {
      err = new UnauthorizedError(
        `${message}: the cloud refused the credentials; check that they are valid and allowed to do this`,
      );
    } else if (code < 400) {
      err = new InvalidConfigError(`${message}; set the API URL to the address it redirects to`);
    } else {
      err = new InvalidConfigError(message);
    }
    if (code !== undefined) statuses.set(err, code);
    return err;
  }
}

function encodeBody(body: unknown): { body?: string; contentType?: string } {
  if (body === undefined) return {};
  if (typeof body === 'string') return { body };
  const form = 'application/x-www-form-urlencoded';
  if (body instanceof URLSearchParams) return { body: body.toString(), contentType: form };
  return { body: JSON.stringify(body), contentType: 'application/json' };
}

function parse<T>(where: string, res: TransportResponse, text: string): T {
  if (text.trim() === '') return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    const type = res.headers.get('content-type') ?? 'a body';
    throw new InvalidConfigError(
      `${where}: ${res.status} returned ${type} that is not JSON; check the API URL`,
    );
  }
}

/** The header value and, for `Bearer x` / `Signature …`, the credential on its own. */
function headerSecrets(value: string | null | undefined): string[] {
  if (!value) return [];
  const space = value.indexOf(' ');
  return space > 0 ? [value, value.slice(space + 1)] : [value];
}

/** A write the leader gate refused: retried, once this replica leads again. */
class NotLeaderRefusal extends RetryableError {}

/** Timeouts and lost connections (a TypeError with a cause, as the transports report them); anything else is a bug or bad input. */
function isTransportError(err: unknown): boolean {
  return (
    err instanceof Error &&
    (err.name === 'TimeoutError' || (err instanceof TypeError && err.cause !== undefined))
  );
}

/** Transport failures that another attempt would meet again: no such name, a refused certificate. */
function isLasting(err: unknown): boolean {
  const cause = err instanceof Error ? (err.cause as NodeJS.ErrnoException | undefined) : undefined;
  if (cause instanceof ProxyError) return cause.lasting;
  const code = cause?.code ?? '';
  return code === 'ENOTFOUND' || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code);
}

function describeFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  // The proxy's own line names the proxy, where it was set, and what to check.
  if (cause instanceof ProxyError) return cause.message;
  return `request failed (${cause instanceof Error ? cause.message : String(cause)})`;
}

/** `503 Service Unavailable (the cloud's own words)`, or `301 Moved Permanently to <location>`. */
function describeResponse(res: TransportResponse, text: string, secrets: string[]): string {
  const line = `${res.status} ${nodeHttp().STATUS_CODES[res.status] ?? res.statusText}`.trim();
  const location = res.headers.get('location');
  if (res.status >= 300 && res.status < 400) return `${line} to ${location ?? 'elsewhere'}`;
  let found: string | undefined;
  try {
    found = pickMessage(JSON.parse(text), 0);
  } catch {
    if (!/html/i.test(res.headers.get('content-type') ?? '')) found = text;
  }
  // Redacted before it is cut short, so that no half of a secret survives.
  const said = redact(found ?? '', secrets)
    .replace(/\s+/g, ' ')
    .trim();
  if (!said) return line;
  return `${line} (${said.length > 200 ? `${said.slice(0, 199)}…` : said})`;
}

function pickMessage(value: unknown, depth: number): string | undefined {
  if (typeof value === 'string') return value;
  if (depth > 3 || value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) return pickMessage(value[0], depth + 1);
  const record = value as Record<string, unknown>;
  for (const key of ['message', 'error_description', 'error', 'errors', 'faultstring', 'detail', 'title']) {
    const found = pickMessage(record[key], depth + 1);
    if (found) return found;
  }
  // OpenStack wraps an error in one key named after the fault: {"itemNotFound": {"message": …}}.
  const keys = Object.keys(record);
  return keys.length === 1 && keys[0] ? pickMessage(record[keys[0]], depth + 1) : undefined;
}

/**
 * Ids from Node and Service objects end up in request paths. URL parsing resolves `.` and `..` (also
 * percent-encoded, which encodeURIComponent leaves alone), so `load-balancer-id: ../droplets` would send
 * an authenticated request to another endpoint. No cloud issues such an id: refuse the request.
 */
function refuseUnsafePath(path: string): void {
  const pathname = path.split('?', 1)[0] ?? '';
  const refuse = (segment: string) =>
    new InvalidConfigError(
      `refusing to request ${JSON.stringify(pathname.slice(0, 200))}: ${JSON.stringify(segment.slice(0, 100))} is no id the cloud issues; check the Node's providerID and the Service's annotations`,
    );
  if (path.includes('#')) throw refuse(pathname);
  for (const segment of pathname.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw refuse(segment);
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    if (decoded === '.' || decoded === '..' || /[/\\\u0000-\u001f\u007f]/.test(decoded))
      throw refuse(segment);
  }
}
