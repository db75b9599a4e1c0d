import { setTimeout as delay } from 'node:timers/promises';
import { unexpectedAnswer } from '../answer.js';
import {
  InvalidConfigError,
  isProviderError,
  NotFoundError,
  RetryableError,
  UnauthorizedError,
  UnreachableError,
} from '../errors.js';
import { HttpClient, type HttpClientOptions, httpStatus, type QueryValue } from '../http.js';
import type { TakeToken } from '../types.js';
import { DEFAULT_API_URL } from './credentials.js';

/** DigitalOcean's maximum page size: 5,000 droplets are 25 requests. */
export const PER_PAGE = 200;
const MAX_PAGES = 10_000;
/**
 * A load balancer still applying a previous action refuses every change with 403
 * `{"id":"forbidden","message":"Load Balancer can't be updated while it processes previous actions"}`
 * (digitalocean/openapi issue 1173; ansible-collections/community.digitalocean issue 185). Such a
 * change is sent again after these waits; only then is it reported.
 */
const BUSY_MESSAGE = /processes previous actions/i;
const BUSY_WAITS_MS = [1_000, 2_000, 4_000, 8_000, 8_000];
const BUSY_REQUEUE_MS = 10_000;
const CREDENTIAL_HINT = 'env DO_ACCESS_TOKEN or Secret kube-system/digitalocean, key access-token';

export interface DigitalOceanClientOptions {
  token: string;
  baseUrl?: string;
  timeoutMs?: number;
  onCloudCall?: (what: string) => void;
  /** The leader gate for requests that change the cloud (ProviderDeps.mayWrite). */
  mayWrite?: () => boolean;
  /** The shared request budget (ProviderDeps.takeToken): one token per request sent, retries and pages included. */
  takeToken?: TakeToken;
  /** The shared budget's hold on a 429 (ProviderDeps.rateLimited). */
  rateLimited?: (waitMs: number) => void;
  /** Where the token came from (ProviderDeps.origin), for the line of a refusal. */
  tokenFrom?: string;
  /** Seams for tests: timers, backoff, retries. */
  http?: Pick<HttpClientOptions, 'sleep' | 'backoff' | 'retries' | 'now' | 'maxRetryAfterMs'>;
}

/** Every collection answer: `{<key>: [...], links: {pages: {next}}, meta: {total}}`. */
interface Page {
  links?: { pages?: { next?: string } };
  meta?: { total?: number };
  [key: string]: unknown;
}

/** The DigitalOcean API's error body (components/schemas/error). */
function isDigitalOceanNotFound(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { id?: unknown }).id === 'not_found';
}

/** A change refused because the load balancer is busy: not a credential problem, and it passes. */
class BusyError extends RetryableError {
  override name = 'BusyError';
}

function describeDigitalOceanError(status: number, body: unknown): BusyError | undefined {
  if (status !== 403 || typeof body !== 'object' || body === null) return undefined;
  const { id, message } = body as { id?: unknown; message?: unknown };
  if (id !== 'forbidden' || typeof message !== 'string' || !BUSY_MESSAGE.test(message)) return undefined;
  return new BusyError('the load balancer is still applying a previous change', BUSY_REQUEUE_MS);
}

/**
 * The page a `links.pages.next` link asks for. Like godo (links.go, pageForURL), only its page number
 * is used: the request goes to the configured API URL, so a proxy that does not rewrite bodies works,
 * and the token never follows a link elsewhere.
 */
function nextPage(link: string | undefined, current: number): number | undefined {
  if (!link) return undefined;
  let page: number;
  try {
    page = Number(new URL(link, 'http://link.invalid').searchParams.get('page'));
  } catch {
    page = Number.NaN;
  }
  if (!Number.isSafeInteger(page) || page <= current) {
    throw new InvalidConfigError(
      `DigitalOcean's next page link ${JSON.stringify(link.slice(0, 200))} has no page number after ${current}; check that the API URL is DigitalOcean's`,
    );
  }
  return page;
}

/**
 * The DigitalOcean API (v2) over the shared HTTP client: bearer token, pagination through
 * `links.pages.next`, and errors that say which call failed and what to do about it. Rate limits
 * (429 with retry-after, ratelimit-reset) and retries on 5xx are the shared client's.
 */
export class DigitalOceanClient {
  private readonly http: HttpClient;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** What a refusal's line says of the token: where it came from, else where ccm reads it. */
  private readonly tokenHint: string;

  constructor(options: DigitalOceanClientOptions) {
    this.tokenHint = options.tokenFrom ? `the token from ${options.tokenFrom}` : CREDENTIAL_HINT;
    const { token } = options;
    if (!token.trim()) {
      throw new InvalidConfigError(
        `no DigitalOcean API token; set ${CREDENTIAL_HINT} (a token with read and write scope)`,
      );
    }
    if (/\s/.test(token) || [...token].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
      throw new InvalidConfigError(
        'the DigitalOcean API token contains whitespace or control characters; paste it again without them',
      );
    }
    const baseUrl = options.baseUrl?.trim() || DEFAULT_API_URL;
    let parsed: URL;
    try {
      parsed = new URL(baseUrl);
    } catch {
      throw new InvalidConfigError(
        `DigitalOcean API URL "${baseUrl}" is not a URL; set DO_OVERRIDE_URL or --cloud-api-url to e.g. ${DEFAULT_API_URL}`,
      );
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      throw new InvalidConfigError(
        `DigitalOcean API URL "${baseUrl}" is not http(s); set DO_OVERRIDE_URL or --cloud-api-url to e.g. ${DEFAULT_API_URL}`,
      );
    }
    this.http = new HttpClient({
      ...options.http,
      baseUrl,
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      authorize: ({ headers }) => {
        headers.set('authorization', `Bearer ${token}`);
      },
      secrets: () => [token],
      userAgent: 'ccm (digitalocean)',
      isNotFound: isDigitalOceanNotFound,
      describeError: describeDigitalOceanError,
      onRequest: (info) => options.onCloudCall?.(`${info.method} ${info.path}`),
      ...(options.mayWrite ? { mayWrite: options.mayWrite } : {}),
      ...(options.takeToken ? { takeToken: options.takeToken } : {}),
      ...(options.rateLimited ? { onRateLimited: options.rateLimited } : {}),
    });
    this.sleep = options.http?.sleep ?? ((ms, signal) => delay(ms, undefined, { signal }));
  }

  async get<T>(what: string, path: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>(what, 'GET', path, undefined, signal);
  }

  async call<T>(
    what: string,
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    query?: Record<string, QueryValue>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.http.request<T>(method, path, {
          ...(body !== undefined ? { body } : {}),
          ...(query ? { query } : {}),
          ...(signal ? { signal } : {}),
        });
        return res.body;
      } catch (err) {
        if (!(err instanceof BusyError)) throw explain(err, what, this.tokenHint);
        const wait = BUSY_WAITS_MS[attempt];
        if (wait === undefined) {
          const waited = BUSY_WAITS_MS.reduce((sum, ms) => sum + ms, 0) / 1000;
          throw new RetryableError(
            `DigitalOcean ${what}: the load balancer is still applying a previous change after ${waited} s; ccm tries again in ${BUSY_REQUEUE_MS / 1000} s`,
            BUSY_REQUEUE_MS,
          );
        }
        // The change was refused, so nothing happened: sending it again is safe, also for a POST.
        await this.sleep(wait, signal);
      }
    }
  }

  /**
   * Every item of a collection, page after page while `links.pages.next` names one, per_page=200.
   * Offset pages shift when something is created or deleted meanwhile (an item is skipped or seen
   * twice); `meta.total` and the ids tell, and such a sweep is read once more, then refused: a caller
   * may read absence from this listing, so it is either whole or an error.
   * `slim` reduces each item as its page arrives, so that only what the caller reads is kept, never
   * every page's full objects (docs/performance.md).
   */
  async listAll<T extends { id: number | string }>(
    what: string,
    path: string,
    key: string,
    signal?: AbortSignal,
    slim: (item: T) => T = (item) => item,
  ): Promise<T[]> {
    let problem = '';
    for (let sweep = 1; sweep <= 2; sweep++) {
      const items: T[] = [];
      const totals = new Set<number>();
      for (let page: number | undefined = 1; page !== undefined; ) {
        if (page > MAX_PAGES) {
          throw new InvalidConfigError(
            `DigitalOcean ${what}: more than ${MAX_PAGES} pages; the API URL does not behave like DigitalOcean's`,
          );
        }
        const answer: Page = await this.call<Page>(what, 'GET', path, undefined, signal, {
          ...(page > 1 ? { page } : {}),
          per_page: PER_PAGE,
        });
        const found = answer?.[key];
        if (!Array.isArray(found))
          throw unexpectedAnswer(`GET ${path}`, `an object with a "${key}" list`, answer);
        for (const item of found as T[]) items.push(slim(item));
        if (typeof answer.meta?.total === 'number') totals.add(answer.meta.total);
        page = nextPage(answer.links?.pages?.next, page);
      }
      const unique = new Set(items.map((item) => item.id)).size;
      const [total] = totals;
      if (unique === items.length && totals.size <= 1 && (total === undefined || total === unique)) {
        return items;
      }
      problem = `read ${items.length} items (${unique} distinct) while the API counted ${[...totals].join(' then ')}`;
    }
    throw new ListingChangedError(
      `DigitalOcean ${what}: the listing changed while it was read, twice (${problem}); nothing is concluded from it, try again`,
      5_000,
    );
  }
}

/** A listing that changed between its pages, twice: what it lacks may exist. */
export class ListingChangedError extends RetryableError {}

/** Which call failed, why, and what to do; same error kind, never the token. */
function explain(err: unknown, what: string, tokenHint = CREDENTIAL_HINT): unknown {
  if (!isProviderError(err)) return err;
  const status = httpStatus(err);
  if (err instanceof UnauthorizedError) {
    const request = err.message.split(': the cloud refused the credentials')[0];
    const advice =
      status === 403
        ? 'the token is not allowed to do this; create one with read and write scope'
        : 'the token is invalid or revoked; create one with read and write scope';
    return new UnauthorizedError(`DigitalOcean ${what} failed (${request}): ${advice} (${tokenHint})`);
  }
  const message = `DigitalOcean ${what} failed: ${err.message}`;
  if (err instanceof UnreachableError) return new UnreachableError(message, err.retryAfterMs);
  if (err instanceof RetryableError)
    return new RetryableError(`${message}; try again later`, err.retryAfterMs);
  if (err instanceof NotFoundError) return new NotFoundError(message);
  return new InvalidConfigError(message);
}
