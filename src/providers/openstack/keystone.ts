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

type IdentityHttpOptions = Pick<
  HttpClientOptions,
  'fetch' | 'onRequest' | 'sleep' | 'now' | 'timeoutMs' | 'retries'
>;

export class Keystone {
  /** The v3 API's client, once auth-url has led to it (identityV3). */
  private http?: Promise<HttpClient>;
  private token?: Token;
  private pending?: Promise<Token>;

  constructor(
    private readonly config: GlobalConfig,
    private readonly options: IdentityHttpOptions,
    private readonly now: () => number = Date.now,
  ) {}

  /** The Keystone v3 client; a failed discovery is not kept, the next call asks again. */
  private identity(signal?: AbortSignal): Promise<HttpClient> {
    this.http ??= identityV3(this.config.authUrl, this.options, signal).then(
      (baseUrl) =>
        new HttpClient({
          ...this.options,
          baseUrl,
          secrets: () => this.secrets(),
          describeError: (status, body) => this.notFound(status, body),
        }),
      (err: unknown) => {
        this.http = undefined;
        throw err;
      },
    );
    return this.http;
  }

  /**
   * Keystone's own 404 on a token request: the application credential (by id) or its user (by name)
   * does not exist, e.g. deleted (keystone/auth/core.py _lookup_app_cred raises
   * ApplicationCredentialNotFound or UserNotFound, exception.py NotFound, code 404, rendered by
   * server/flask/application.py _handle_keystone_exception as {"error": {code, title, message}}).
   * A 404 without that body is a wrong auth-url, said in authenticate().
   */
  private notFound(status: number, body: unknown): UnauthorizedError | undefined {
    const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    if (status !== 404 || error?.code !== 404 || typeof error.message !== 'string') return undefined;
    if (!/^Could not find /.test(error.message)) return undefined;
    return new UnauthorizedError(
      `Keystone at ${this.config.authUrl} says the ${describeAuth(this.config.auth)} from cloud.conf [Global] does not exist (404: ${error.message}): the application credential or its user was deleted or is mistyped; create one (openstack application credential create) and set it in cloud.conf`,
    );
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
    const http = await this.identity(signal);
    let res: Awaited<ReturnType<HttpClient['post']>>;
    try {
      res = await http.post<TokenBody>('auth/tokens', requestBody(this.config.auth), {
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      // notFound(): Keystone's own 404.
      if (err instanceof UnauthorizedError && httpStatus(err) === 404) throw err;
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

/** Version statuses a client may use, as Keystone and gophercloud's ChooseVersion name them. */
const USABLE = new Set(['stable', 'current', 'supported']);

/**
 * The Keystone v3 root that auth-url leads to. A URL that ends in /v3 is that root, as given (no
 * request). Any other is Keystone's unversioned root: its version document (GET without a token,
 * answered 300 Multiple Choices, keystone/api/discovery.py) names v3 and its URL, which may be a
 * path of its own (/identity/v3, /keystone/v3/…) rather than auth-url + "/v3". The link's path is
 * used on auth-url's own scheme, host and port: the password never goes to a host not configured,
 * even where Keystone's public_endpoint names an internal one.
 */
export async function identityV3(
  authUrl: string,
  options: IdentityHttpOptions = {},
  signal?: AbortSignal,
): Promise<string> {
  const url = authUrl.replace(/\/+$/, '');
  if (/\/v3$/.test(url)) return url;
  if (/\/v2\.0$/.test(url)) {
    throw new InvalidConfigError(
      `[Global] auth-url ${authUrl} is Keystone v2.0, which is gone; use the v3 URL (…/v3)`,
    );
  }
  const http = new HttpClient({ ...options, baseUrl: url });
  let body: unknown;
  try {
    body = (await http.get('', { okStatuses: [300], ...(signal ? { signal } : {}) })).body;
  } catch (err) {
    const status = httpStatus(err);
    if (status !== undefined && status >= 400 && status < 500) {
      throw new InvalidConfigError(
        `[Global] auth-url ${authUrl} answered ${status} to the version discovery (GET without a token); set it to Keystone's URL, e.g. https://keystone.example.com:5000/v3`,
      );
    }
    throw err;
  }
  const versions = versionEntries(body);
  const v3 = versions.find(
    (v) => typeof v.id === 'string' && /^v3(\.|$)/.test(v.id) && USABLE.has(String(v.status).toLowerCase()),
  );
  const href = v3?.links?.find((l) => l.rel === 'self')?.href;
  if (!v3 || typeof href !== 'string' || !URL.canParse(href, `${url}/`)) {
    const offered = versions.map((v) => `${String(v.id)} (${String(v.status)})`).join(', ') || 'none';
    throw new InvalidConfigError(
      `[Global] auth-url ${authUrl}: its version document offers no usable Keystone v3 with a link (it offers: ${offered}); set auth-url to the Keystone v3 URL (…/v3)`,
    );
  }
  const link = new URL(href, `${url}/`);
  const configured = new URL(url);
  return `${configured.origin}${link.pathname}`.replace(/\/+$/, '');
}

interface VersionEntry {
  id?: unknown;
  status?: unknown;
  links?: { rel?: string; href?: unknown }[];
}

/** The versions of a version document: Keystone's {versions: {values}}, a {versions: [...]} list, or one {version}. */
function versionEntries(body: unknown): VersionEntry[] {
  if (typeof body !== 'object' || body === null) return [];
  const doc = body as { versions?: unknown; version?: unknown };
  const list =
    typeof doc.versions === 'object' && doc.versions !== null && !Array.isArray(doc.versions)
      ? (doc.versions as { values?: unknown }).values
      : doc.versions;
  if (Array.isArray(list)) return list.filter((v) => typeof v === 'object' && v !== null);
  if (typeof doc.version === 'object' && doc.version !== null) return [doc.version as VersionEntry];
  return [];
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
