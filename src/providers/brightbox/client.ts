import { InvalidConfigError, UnauthorizedError } from '../errors.js';
import { HttpClient, type HttpClientOptions, httpStatus } from '../http.js';
import type { TakeToken } from '../types.js';

/**
 * The Brightbox API client: OAuth2 client credentials (`POST <api>/token/`, Basic auth), the token
 * cached and renewed before it expires, a 401 answered by one fresh token and one retry, and the
 * optional `account_id` on every request. JSON shapes follow brightbox/gobrightbox's struct tags.
 */

export interface Ref {
  id: string;
  name?: string | null;
  status?: string;
}

export interface CloudIPRef {
  id: string;
  name: string | null;
  status: string;
  public_ip?: string | null;
  public_ipv4?: string | null;
  public_ipv6?: string | null;
  fqdn?: string | null;
  reverse_dns?: string | null;
}

export interface ApiServer {
  id: string;
  name: string | null;
  status: string;
  hostname: string | null;
  fqdn: string | null;
  zone?: { handle?: string | null } | null;
  server_type?: { handle?: string | null } | null;
  interfaces?: { id: string; ipv4_address?: string | null; ipv6_address?: string | null }[] | null;
  cloud_ips?: CloudIPRef[] | null;
}

export interface ApiCloudIP extends CloudIPRef {
  load_balancer?: Ref | null;
  server?: Ref | null;
  interface?: Ref | null;
  server_group?: Ref | null;
  database_server?: Ref | null;
}

export interface ApiListener {
  protocol: string;
  in: number;
  out: number;
  timeout?: number | null;
  proxy_protocol?: string | null;
}

export interface ApiHealthcheck {
  type: string;
  port: number;
  request?: string | null;
  interval?: number | null;
  timeout?: number | null;
  threshold_up?: number | null;
  threshold_down?: number | null;
}

export interface ApiLoadBalancer {
  id: string;
  name: string | null;
  status: string;
  policy?: string | null;
  https_redirect?: boolean | null;
  listeners?: ApiListener[] | null;
  healthcheck?: ApiHealthcheck | null;
  acme?: {
    domains?: { identifier: string; status?: string | null; last_message?: string | null }[] | null;
  } | null;
  nodes?: Ref[] | null;
  cloud_ips?: CloudIPRef[] | null;
}

export interface ApiServerGroup {
  id: string;
  name: string | null;
  description: string | null;
  default?: boolean;
  firewall_policy?: Ref | null;
  servers?: Ref[] | null;
}

export interface ApiFirewallRule {
  id: string;
  protocol: string | null;
  source: string | null;
  source_port?: string | null;
  destination: string | null;
  destination_port: string | null;
  icmp_type_name?: string | null;
  description: string | null;
}

export interface ApiFirewallPolicy {
  id: string;
  name: string | null;
  description: string | null;
  server_group?: Ref | null;
  rules?: ApiFirewallRule[] | null;
}

export const DEFAULT_API_URL = 'https://api.gb1.brightbox.com';

export interface BrightboxClientOptions {
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  accountId?: string;
  onCloudCall?: (what: string) => void;
  /** The leader gate for requests that change the cloud (ProviderDeps.mayWrite). */
  mayWrite?: () => boolean;
  /**
   * The shared request budget (ProviderDeps.takeToken): one token per request sent, each attempt,
   * the token endpoint's requests and the retry after a refused token included.
   */
  takeToken?: TakeToken;
  /** The shared budget's hold on a rate-limit answer (ProviderDeps.rateLimited). */
  rateLimited?: (waitMs: number) => void;
  /** Where the client id and secret came from (ProviderDeps.origin), for the line of a refusal. */
  credentialsFrom?: string;
  /** Test seams of the shared HTTP client (sleep, retries, fetch); never credentials. */
  http?: Pick<HttpClientOptions, 'sleep' | 'retries' | 'timeoutMs' | 'backoff' | 'fetch'>;
  now?: () => number;
}

interface Token {
  value: string;
  renewAt: number;
}

interface TokenResponse {
  access_token?: unknown;
  expires_in?: unknown;
}

/** Brightbox's own not-found answer: a 404 carrying its request-error body (`error_name`, `errors`). */
export function isBrightboxNotFound(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return false;
  const record = body as Record<string, unknown>;
  return typeof record.error_name === 'string' && Array.isArray(record.errors);
}

export class BrightboxClient {
  private readonly api: HttpClient;
  private readonly auth: HttpClient;
  private readonly now: () => number;
  private token?: Token;
  private pending?: Promise<Token>;

  constructor(private readonly options: BrightboxClientOptions) {
    this.now = options.now ?? Date.now;
    const secrets = () => [options.clientSecret, ...(this.token ? [this.token.value] : [])];
    const onRequest: HttpClientOptions['onRequest'] = options.onCloudCall
      ? (info) => options.onCloudCall?.(`${info.method} ${info.path}`)
      : undefined;
    const base = options.apiUrl.replace(/\/+$/, '');
    // Both clients send to the same API host: every request they send is one of the budget's.
    const budget: Pick<HttpClientOptions, 'takeToken' | 'onRateLimited'> = {
      ...(options.takeToken ? { takeToken: options.takeToken } : {}),
      ...(options.rateLimited ? { onRateLimited: options.rateLimited } : {}),
    };
    this.api = new HttpClient({
      ...options.http,
      baseUrl: `${base}/1.0`,
      userAgent: 'ccm (brightbox)',
      secrets,
      onRequest,
      now: this.now,
      isNotFound: (body) => isBrightboxNotFound(body),
      ...budget,
      ...(options.mayWrite ? { mayWrite: options.mayWrite } : {}),
      authorize: async ({ headers, url }) => {
        headers.set('authorization', `Bearer ${(await this.currentToken()).value}`);
        if (options.accountId && !url.searchParams.has('account_id')) {
          url.searchParams.set('account_id', options.accountId);
        }
      },
    });
    this.auth = new HttpClient({
      ...options.http,
      baseUrl: base,
      userAgent: 'ccm (brightbox)',
      secrets,
      onRequest,
      now: this.now,
      ...budget,
    });
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>('GET', path, undefined, signal);
  }
  post<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    return this.call<T>('POST', path, body, signal);
  }
  put<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.call<T>('PUT', path, body, signal);
  }
  delete(path: string, signal?: AbortSignal): Promise<unknown> {
    return this.call('DELETE', path, undefined, signal);
  }

  /** Fetches a fresh token: the one cheap call that proves the credentials. */
  async verify(signal?: AbortSignal): Promise<string> {
    this.token = undefined;
    await this.currentToken(signal);
    const account = this.options.accountId ? `, account ${this.options.accountId}` : '';
    return `Brightbox API client ${this.options.clientId} at ${new URL(this.options.apiUrl).host}${account}`;
  }

  private async call<T>(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    const send = async () =>
      (await this.api.request<T>(method, path, { ...(body !== undefined ? { body } : {}), signal })).body;
    const used = await this.currentToken(signal);
    try {
      return await send();
    } catch (err) {
      // A token the API stopped accepting (expired early, revoked): one fresh token, one retry. A 401
      // answers before anything is done, so repeating a POST is safe.
      if (httpStatus(err) !== 401) throw err;
      if (this.token === used) this.token = undefined;
      try {
        return await send();
      } catch (again) {
        if (httpStatus(again) === 401) {
          throw new UnauthorizedError(
            `${method} ${path}: Brightbox refused a fresh token of API client ${this.options.clientId}; check that it may use this account`,
          );
        }
        throw again;
      }
    }
  }

  private async currentToken(signal?: AbortSignal): Promise<Token> {
    if (this.token && this.now() < this.token.renewAt) return this.token;
    // Concurrent requests share one token request.
    this.pending ??= this.fetchToken(signal).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchToken(signal?: AbortSignal): Promise<Token> {
    const basic = Buffer.from(
      `${formEncode(this.options.clientId)}:${formEncode(this.options.clientSecret)}`,
    ).toString('base64');
    let body: TokenResponse | undefined;
    try {
      ({ body } = await this.auth.post<TokenResponse>(
        'token/',
        // gobrightbox's endpoint.InfrastructureScope: the API, not Orbit storage.
        new URLSearchParams({ grant_type: 'client_credentials', scope: 'infrastructure' }),
        { headers: { authorization: `Basic ${basic}` }, signal },
      ));
    } catch (err) {
      const status = httpStatus(err);
      if (status === 400 || status === 401 || status === 403) {
        throw new UnauthorizedError(
          `Brightbox refused API client ${this.options.clientId} (${status}): check ${this.options.credentialsFrom ?? 'BRIGHTBOX_CLIENT and BRIGHTBOX_CLIENT_SECRET (Secret keys controller-client, controller-client-secret)'}`,
        );
      }
      throw err;
    }
    if (typeof body?.access_token !== 'string' || body.access_token === '') {
      throw new InvalidConfigError(
        `the token endpoint at ${new URL(this.options.apiUrl).host} answered without an access token; check the API URL`,
      );
    }
    const lifetime = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600;
    // Renewed a minute early (or at half-life for short tokens), so no request carries a dying token.
    const margin = Math.min(60, lifetime / 2);
    this.token = { value: body.access_token, renewAt: this.now() + (lifetime - margin) * 1000 };
    return this.token;
  }
}

/** RFC 6749 §2.3.1: client id and secret are form-encoded before Basic auth. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}
