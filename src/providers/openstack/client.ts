import { setTimeout as delay } from 'node:timers/promises';
import { nodeTls } from '../../node-modules.js';
import { FileNotRead, readConfigFile } from '../config-files.js';
import { InvalidConfigError } from '../errors.js';
import { HttpClient, type HttpResponse, httpStatus, type RequestOptions } from '../http.js';
import { fetchTransport, nodeTransport, type Transport } from '../http-transport.js';
import type { ProviderDeps } from '../types.js';
import type { GlobalConfig } from './config.js';
import { endpointFor, Keystone, type Token } from './keystone.js';

/**
 * One session with an OpenStack cloud: a Keystone token shared by the Nova, Neutron and Octavia
 * clients, whose base URLs come from the token's catalog. A request answered 401 with a token that
 * was cached is sent once more with a fresh token: tokens expire or are revoked while ccm runs.
 */

export type ServiceType = 'compute' | 'network' | 'load-balancer';

export interface SessionOptions {
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  timeoutMs?: number;
  retries?: number;
}

/**
 * Each API's own "no such resource" body (a 404 from anything else is never read as "gone"). The
 * frameworks' answer to a path no controller serves has the same envelope and must not count: Nova
 * wraps any webob 404 as itemNotFound with webob's "The resource could not be found."
 * (nova/api/openstack/wsgi.py Fault), Neutron names it HTTPNotFound, and Octavia (pecan) says "The
 * resource could not be found.", where its own is exceptions.NotFound "<resource> <id> not found.".
 */
const GENERIC_404 = 'The resource could not be found.';
const NOT_FOUND: Record<ServiceType, (body: unknown) => boolean> = {
  // {"itemNotFound": {"code": 404, "message": "Instance … could not be found."}}
  compute: (body) =>
    isRecord(body) &&
    isRecord(body.itemNotFound) &&
    body.itemNotFound.code === 404 &&
    body.itemNotFound.message !== GENERIC_404,
  // {"NeutronError": {"type": "FloatingIPNotFound", "message": …, "detail": ""}}
  network: (body) =>
    isRecord(body) &&
    isRecord(body.NeutronError) &&
    typeof body.NeutronError.type === 'string' &&
    body.NeutronError.type !== 'HTTPNotFound' &&
    body.NeutronError.type.endsWith('NotFound'),
  // {"faultcode": "Client", "faultstring": "Load Balancer … not found.", "debuginfo": null}
  // (octavia/common/exceptions.py NotFound, its only 404)
  'load-balancer': (body) =>
    isRecord(body) && typeof body.faultstring === 'string' && /\S \S+ not found\.$/.test(body.faultstring),
};

export class Session {
  readonly keystone: Keystone;
  private readonly services = new Map<ServiceType, { http: HttpClient; region: string }>();
  private readonly transport: Transport | undefined;

  constructor(
    readonly config: GlobalConfig,
    private readonly deps: ProviderDeps,
    private readonly options: SessionOptions = {},
  ) {
    this.transport = options.fetch ? fetchTransport(options.fetch) : tlsTransport(config);
    this.keystone = new Keystone(config, this.httpOptions('identity'), options.now);
  }

  /** Waits `ms` (the injected sleep in tests); rejects when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.options.sleep ? this.options.sleep(ms, signal) : delay(ms, undefined, { signal });
  }

  /** The region the cloud is in: the configured one, or the catalog's only one. */
  async region(signal?: AbortSignal): Promise<string> {
    return (await this.service('compute', signal)).region;
  }

  async request<T>(
    type: ServiceType,
    method: string,
    path: string,
    opts: RequestOptions = {},
  ): Promise<HttpResponse<T>> {
    const { http } = await this.service(type, opts.signal);
    const send = (token: Token) =>
      http.request<T>(method, path, { ...opts, headers: { ...opts.headers, 'x-auth-token': token.value } });
    const token = await this.keystone.current(opts.signal);
    try {
      return await send(token);
    } catch (err) {
      if (httpStatus(err) !== 401) throw err;
      return send(await this.keystone.replace(token, opts.signal));
    }
  }

  private async service(type: ServiceType, signal?: AbortSignal) {
    const known = this.services.get(type);
    if (known) return known;
    const token = await this.keystone.current(signal);
    const endpoint = endpointFor(token, type, this.config.endpointInterface, this.config.region);
    const http = new HttpClient({
      ...this.httpOptions(type),
      baseUrl: serviceRoot(type, endpoint.url),
      secrets: () => this.keystone.secrets(),
      isNotFound: NOT_FOUND[type],
      ...(this.deps.mayWrite ? { mayWrite: this.deps.mayWrite } : {}),
      ...(this.deps.takeToken ? { takeToken: this.deps.takeToken } : {}),
      ...(this.deps.rateLimited ? { onRateLimited: this.deps.rateLimited } : {}),
    });
    const entry = { http, region: endpoint.region };
    this.services.set(type, entry);
    return entry;
  }

  private httpOptions(type: ServiceType | 'identity') {
    const { onCloudCall } = this.deps;
    return {
      ...(this.transport ? { transport: this.transport } : {}),
      ...(this.options.sleep ? { sleep: this.options.sleep } : {}),
      ...(this.options.now ? { now: this.options.now } : {}),
      ...(this.options.timeoutMs !== undefined ? { timeoutMs: this.options.timeoutMs } : {}),
      ...(this.options.retries !== undefined ? { retries: this.options.retries } : {}),
      userAgent: 'ccm (openstack)',
      ...(onCloudCall
        ? {
            onRequest: (info: { method: string; path: string }) =>
              onCloudCall(`${type} ${info.method} ${info.path}`),
          }
        : {}),
    };
  }
}

/** A transport honouring ca-file, cert-file/key-file and tls-insecure; undefined when none is set. */
function tlsTransport(config: GlobalConfig): Transport | undefined {
  if (!config.caFile && !config.certFile && !config.keyFile && !config.tlsInsecure) return undefined;
  if (Boolean(config.certFile) !== Boolean(config.keyFile)) {
    throw new InvalidConfigError(
      'cloud.conf: [Global] cert-file and key-file go together; set both or neither',
    );
  }
  const read = (key: string, path: string | undefined) => {
    if (!path) return undefined;
    try {
      return readConfigFile(path);
    } catch (err) {
      if (err instanceof FileNotRead) throw err;
      throw new InvalidConfigError(
        `cloud.conf: [Global] ${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      );
    }
  };
  const ca = read('ca-file', config.caFile);
  const cert = read('cert-file', config.certFile);
  const key = read('key-file', config.keyFile);
  // Checked now, as the official controller does (cert.NewPool, tls.LoadX509KeyPair), not at the first
  // request: a bad file refuses the config, and a reload keeps the provider it has.
  for (const [name, path, text] of [
    ['ca-file', config.caFile, ca],
    ['cert-file', config.certFile, cert],
    ['key-file', config.keyFile, key],
  ] as const) {
    if (path && !text?.includes('-----BEGIN')) {
      throw new InvalidConfigError(`cloud.conf: [Global] ${name}: ${path} holds no PEM block`);
    }
  }
  try {
    nodeTls().createSecureContext({ ...(ca ? { ca } : {}), ...(cert ? { cert, key } : {}) });
  } catch (err) {
    // OpenSSL's code only: its message may quote the file.
    throw new InvalidConfigError(
      `cloud.conf: [Global] ca-file, cert-file or key-file not usable (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}); check that they are PEM and that the key is the certificate's`,
    );
  }
  return nodeTransport({
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    rejectUnauthorized: !config.tlsInsecure,
  });
}

/**
 * The root the API paths are appended to. Neutron and Octavia paths carry their version (v2.0/…,
 * v2.0/lbaas/…: every Octavia serves /v2.0, only those since Rocky also /v2, so ccm asks for v2.0
 * as gophercloud and the official controller do), and most catalogs register the unversioned root;
 * a catalog URL that ends in the version already is cut back to the root. Nova's URL is used as it
 * is (…/v2.1[/<project>]).
 */
export function serviceRoot(type: ServiceType, url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  if (type === 'network') return trimmed.replace(/\/v2\.0$/, '');
  if (type === 'load-balancer') return trimmed.replace(/\/v2(\.0)?$/, '');
  return trimmed;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
