import { InvalidConfigError, UnauthorizedError } from '../errors.js';
import { HttpClient, type HttpClientOptions, httpStatus } from '../http.js';
import type { EndpointInterface, GlobalConfig, KeystoneAuth } from './config.js';

/**
 * Keystone v3: one token (password or application credential, scoped to the project), its service
 * catalog, and re-authentication when it expires. The token is held in memory only and redacted
 * from every message the HTTP clients produce.
 */

interface CatalogEndpoint {
  interface: string;
  region?: string | null;
  region_id?: string | null;
  url: string;
}

interface CatalogEntry {
  type: string;
  name?: string;
  endpoints: CatalogEndpoint[];
}

interface TokenBody {
  token: {
    expires_at: string;
    project?: { id: string; name: string; domain?: { id?: string; name?: string } };
    user?: { id: string; name: string };
    catalog?: CatalogEntry[];
  };
}

export interface Token {
  value: string;
  issuedAt: number;
  expiresAt: number;
  project?: { id: string; name: string };
  user?: { name: string };
  catalog: CatalogEntry[];
}

/**
 * A token is renewed this long before Keystone says it expires (or at half its life, for short-lived
 * tokens), so that no request sets out with a token about to lapse.
 */
const RENEW_BEFORE_MS = 60_000;

export class Keystone {
  private readonly http: HttpClient;
  private token?: Token;
  private pending?: Promise<Token>;

  constructor(
    private readonly config: GlobalConfig,
    options: Pick<HttpClientOptions, 'fetch' | 'onRequest' | 'sleep' | 'now' | 'timeoutMs' | 'retries'>,
    private readonly now: () => number = Date.now,
  ) {
    this.http = new HttpClient({
      ...options,
      baseUrl: identityV3(config.authUrl),
      secrets: () => this.secrets(),
    });
  }

  /** Credentials and the current token, for redaction by every client. */
  secrets(): string[] {
    const auth = this.config.auth;
    const values = [auth.method === 'password' ? auth.password : auth.secret];
    if (this.token) values.push(this.token.value);
    return values;
  }

  /** A valid token: the cached one, or a new one. Concurrent callers share one request. */
  async current(signal?: AbortSignal): Promise<Token> {
    const token = this.token;
    if (token) {
      const margin = Math.min(RENEW_BEFORE_MS, (token.expiresAt - token.issuedAt) / 2);
      if (token.expiresAt - margin > this.now()) return token;
    }
    return this.renew(signal);
  }

  /** Drops `stale` (a token a service refused) and authenticates again, once for all callers. */
  async replace(stale: Token, signal?: AbortSignal): Promise<Token> {
    if (this.token && this.token !== stale) return this.token;
    this.token = undefined;
    return this.renew(signal);
  }

  private renew(signal?: AbortSignal): Promise<Token> {
    this.pending ??= this.authenticate(signal).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async authenticate(signal?: AbortSignal): Promise<Token> {
    let res: Awaited<ReturnType<HttpClient['post']>>;
    try {
      res = await this.http.post<TokenBody>('auth/tokens', requestBody(this.config.auth), {
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (httpStatus(err) === 401) {
        throw new UnauthorizedError(
          `Keystone at ${this.config.authUrl} refused the ${describeAuth(this.config.auth)} from cloud.conf [Global]; check them (and the project, domain) and that they have not expired`,
        );
      }
      if (httpStatus(err) === 404) {
        throw new InvalidConfigError(
          `${this.config.authUrl} has no Keystone v3 token API (404); set [Global] auth-url to the Keystone v3 URL, e.g. https://keystone.example.com:5000/v3`,
        );
      }
      throw err;
    }
    const value = res.headers.get('x-subject-token');
    const body = res.body as TokenBody | undefined;
    if (!value || !body?.token) {
      throw new InvalidConfigError(
        `${this.config.authUrl} answered the token request without X-Subject-Token; is [Global] auth-url a Keystone v3 endpoint?`,
      );
    }
    const expiresAt = Date.parse(body.token.expires_at);
    this.token = {
      value,
      issuedAt: this.now(),
      expiresAt: Number.isNaN(expiresAt) ? this.now() + 3_600_000 : expiresAt,
      ...(body.token.project
        ? { project: { id: body.token.project.id, name: body.token.project.name } }
        : {}),
      ...(body.token.user ? { user: { name: body.token.user.name } } : {}),
      catalog: body.token.catalog ?? [],
    };
    return this.token;
  }
}

/** The endpoint URL of a service from the token's catalog, for the configured interface and region. */
export function endpointFor(
  token: Token,
  type: string,
  endpointInterface: EndpointInterface,
  region: string,
): { url: string; region: string } {
  const service = token.catalog.find((entry) => entry.type === type);
  if (!service) {
    const scope = token.project ? '' : ' (the token has no project scope: set tenant-id or tenant-name)';
    throw new InvalidConfigError(
      `the Keystone catalog has no "${type}" service${scope}; ccm needs compute (Nova)${type === 'load-balancer' ? ' and load-balancer (Octavia) for load balancers' : ''}`,
    );
  }
  const candidates = service.endpoints.filter((e) => e.interface === endpointInterface);
  const regionOf = (e: CatalogEndpoint) => e.region_id ?? e.region ?? '';
  const matches = region ? candidates.filter((e) => regionOf(e) === region) : candidates;
  const regions = [...new Set(candidates.map(regionOf))];
  if (matches.length === 0) {
    throw new InvalidConfigError(
      `the Keystone catalog has no ${endpointInterface} "${type}" endpoint in region "${region}" (it has: ${regions.join(', ') || 'none'}); check [Global] region and os-endpoint-type`,
    );
  }
  const found = new Set(matches.map(regionOf));
  if (!region && found.size > 1) {
    throw new InvalidConfigError(
      `the Keystone catalog has "${type}" endpoints in several regions (${[...found].join(', ')}); set [Global] region`,
    );
  }
  const chosen = matches[0] as CatalogEndpoint;
  return { url: chosen.url, region: region || regionOf(chosen) };
}

/** The v3 root of auth-url: `…/v3` as given, or with `/v3` added to a bare Keystone URL. */
export function identityV3(authUrl: string): string {
  const url = authUrl.replace(/\/+$/, '');
  if (/\/v3$/.test(url)) return url;
  if (/\/v2\.0$/.test(url)) {
    throw new InvalidConfigError(
      `[Global] auth-url ${authUrl} is Keystone v2.0, which is gone; use the v3 URL (…/v3)`,
    );
  }
  return `${url}/v3`;
}

function requestBody(auth: KeystoneAuth): unknown {
  if (auth.method === 'application_credential') {
    return {
      auth: {
        identity: {
          methods: ['application_credential'],
          application_credential: { ...auth.credential, secret: auth.secret },
        },
      },
    };
  }
  return {
    auth: {
      identity: { methods: ['password'], password: { user: { ...auth.user, password: auth.password } } },
      ...(auth.project ? { scope: { project: auth.project } } : {}),
    },
  };
}

function describeAuth(auth: KeystoneAuth): string {
  if (auth.method === 'application_credential') {
    return 'id' in auth.credential
      ? `application credential ${auth.credential.id}`
      : `application credential "${auth.credential.name}"`;
  }
  return 'id' in auth.user ? `password of user ${auth.user.id}` : `password of user "${auth.user.name}"`;
}
