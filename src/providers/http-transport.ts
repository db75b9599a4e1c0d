import type { Agent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { endWhenConnected } from '../end-when-connected.js';
import { nodeHttp, nodeHttps, nodeTls, nodeZlib } from '../node-modules.js';
import {
  agentProxyOptions,
  type Env,
  type ProxyFor,
  type ProxySetting,
  proxyFailure,
  proxyFromEnvironment,
} from '../proxy.js';

/**
 * How the cloud clients' requests reach the wire: node:http/node:https with one keep-alive pool, the
 * same stack as ccm's Kubernetes transport. `fetch` would load Node's bundled undici beside it, with
 * its llhttp compiled from WebAssembly: +35 MiB of peak RSS on Node 24 for the first few requests
 * (docs/performance.md, "One HTTP stack"), more than all of ccm's caches at 1,000 Nodes.
 */

/** Request headers, case-insensitive; `fetch`'s Headers fits it too. */
export interface RequestHeaders {
  get(name: string): string | null;
  set(name: string, value: string): void;
  has(name: string): boolean;
}

/** What is read of an answer's headers. */
export interface ResponseHeaders {
  get(name: string): string | null;
}

export interface TransportRequest {
  method: string;
  headers: RequestHeaders & { forEach(fn: (value: string, name: string) => void): void };
  body?: string;
  signal: AbortSignal;
  /**
   * Asked once the connection is up, just before anything is sent (the leader gate, again): an error
   * refuses the request unsent, and the transport rejects with that error itself.
   */
  refusal?: () => Error | undefined;
}

export interface TransportResponse {
  status: number;
  statusText: string;
  headers: ResponseHeaders;
  /** The whole body as text. */
  text: string;
}

/**
 * Sends one request, never following a redirect. Rejects with the signal's reason once it aborts, with
 * ResponseTooLarge past `maxBytes`, and with a TypeError whose cause is the socket's error when the
 * connection fails (as fetch does, so that one classification serves both).
 */
export type Transport = (url: URL, req: TransportRequest, maxBytes: number) => Promise<TransportResponse>;

export class ResponseTooLarge extends Error {}

/** A case-insensitive header map with the part of fetch's Headers the clients use. */
export class HeaderMap implements RequestHeaders {
  private readonly values = new Map<string, string>();
  constructor(init?: Record<string, string>) {
    for (const [name, value] of Object.entries(init ?? {})) this.set(name, value);
  }
  get(name: string): string | null {
    return this.values.get(name.toLowerCase()) ?? null;
  }
  set(name: string, value: string): void {
    if (/[\r\n\0]/.test(value)) throw new TypeError(`invalid value for header ${name}`);
    this.values.set(name.toLowerCase(), value);
  }
  has(name: string): boolean {
    return this.values.has(name.toLowerCase());
  }
  forEach(fn: (value: string, name: string) => void): void {
    for (const [name, value] of this.values) fn(value, name);
  }
}

export interface TlsOptions {
  /** PEM: replaces the system's CAs, as OpenStack's ca-file does. */
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
}

/** Every pool made, held weakly: a reloaded OpenStack cloud.conf makes a new one and drops the old. */
let pools: WeakRef<Agent>[] = [];

/**
 * Ends every cloud connection, a request in flight included (it fails): at the end of `ccm run`'s
 * shutdown, so that a cloud that does not answer keeps no socket, and so the process, alive. A pool
 * stays usable after (it opens new connections).
 */
export function closeCloudConnections(): void {
  for (const pool of pools) pool.deref()?.destroy();
}

export interface ProxyOptions {
  /**
   * Where HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read (src/proxy.ts has the rule), once, at the
   * first request; default the environment the CLI handed to `useProxyEnvironment`.
   */
  env?: Env;
}

/** The environment the cloud's proxy is chosen from: none until the CLI, at its edge, gives its own. */
let proxyEnvironment: Env = {};

/** Called once by the CLI with the process's environment (the providers never read it themselves). */
export function useProxyEnvironment(env: Env): void {
  proxyEnvironment = env;
}

/**
 * A transport with its own connection pools (and TLS settings); `defaultTransport` for the usual case.
 * One pool per scheme for the requests that go direct, and one per scheme and proxy for those that go
 * through a proxy: NO_PROXY may send one host of a cloud (OpenStack's identity, say) around the proxy
 * and another through it.
 */
export function nodeTransport(tls: TlsOptions = {}, options: ProxyOptions = {}): Transport {
  const agents = new Map<string, Agent>();
  let proxyFor: ProxyFor | undefined;
  // An idle connection is closed after 4 s, as fetch's (undici's keepAliveTimeout) was, or sooner where
  // the server's Keep-Alive header says so: a request is not sent down a socket the server is closing.
  const common = { keepAlive: true, scheduling: 'lifo' as const, timeout: 4_000 };
  const agentFor = (url: URL, proxy: ProxySetting | undefined): Agent => {
    const key = `${url.protocol}${proxy ? ` ${proxy.url.href}` : ''}`;
    let agent = agents.get(key);
    if (agent) return agent;
    const proxied = agentProxyOptions(proxy, url);
    agent =
      url.protocol === 'http:'
        ? new (nodeHttp().Agent)({ ...common, ...proxied })
        : new (nodeHttps().Agent)({
            ...common,
            ...proxied,
            // One TLS context (CA store, client certificate) shared by every connection, not one each.
            // Through a proxy it is the tunnelled connection's, to the cloud; an https:// proxy's own
            // certificate is checked against the system's CAs.
            secureContext: nodeTls().createSecureContext({
              ...(tls.ca ? { ca: tls.ca } : {}),
              ...(tls.cert ? { cert: tls.cert } : {}),
              ...(tls.key ? { key: tls.key } : {}),
            }),
            rejectUnauthorized: tls.rejectUnauthorized ?? true,
          });
    agents.set(key, pooled(agent));
    return agent;
  };
  return (url, req, maxBytes) => {
    let proxy: ProxySetting | undefined;
    let agent: Agent;
    try {
      proxyFor ??= proxyFromEnvironment(options.env ?? proxyEnvironment);
      proxy = proxyFor(url);
      agent = agentFor(url, proxy);
    } catch (err) {
      // A proxy setting that cannot be used: not a transport failure, nothing was sent.
      return Promise.reject(err);
    }
    if (!proxy) return send(url, req, maxBytes, agent);
    return send(url, req, maxBytes, agent).catch((err: unknown) => {
      // Told as the proxy's failure, naming the proxy (never its credentials) and its variable.
      const atProxy = err instanceof TypeError ? proxyFailure(err.cause, proxy, url) : undefined;
      throw atProxy ? new TypeError('request failed', { cause: atProxy }) : err;
    });
  };
}

function pooled(agent: Agent): Agent {
  pools = pools.filter((pool) => pool.deref() !== undefined);
  pools.push(new WeakRef(agent));
  return agent;
}

let shared: Transport | undefined;
/** One pool for every client without TLS settings of its own. */
export function defaultTransport(): Transport {
  shared ??= nodeTransport();
  return shared;
}

function send(url: URL, req: TransportRequest, maxBytes: number, agent: Agent): Promise<TransportResponse> {
  const { signal } = req;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    req.headers.forEach((value, name) => {
      headers[name] = value;
    });
    if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
    // Asked for, as fetch and Go's transport ask: a listing of 1,000 servers crosses the wire a tenth
    // the size.
    headers['accept-encoding'] ??= 'gzip, deflate';
    const request = (url.protocol === 'http:' ? nodeHttp() : nodeHttps()).request;
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      fn();
    };
    const fail = (err: unknown) => finish(() => reject(err));
    const onAbort = () => {
      fail(signal.reason);
      outgoing.destroy();
    };
    const outgoing = request(url, { method: req.method, headers, agent }, (res: IncomingMessage) => {
      const declared = Number(res.headers['content-length']);
      if (declared > maxBytes) {
        res.destroy();
        fail(new ResponseTooLarge());
        return;
      }
      // The cap counts what is decoded: a small compressed answer may unpack to any size.
      const body = decoded(res, (err) => {
        res.destroy();
        fail(new TypeError('request failed', { cause: err }));
      });
      const chunks: Buffer[] = [];
      let size = 0;
      body.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          res.destroy();
          body.destroy();
          fail(new ResponseTooLarge());
          return;
        }
        chunks.push(chunk);
      });
      body.on('end', () =>
        finish(() =>
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? '',
            headers: incomingHeaders(res.headers),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        ),
      );
      res.on('error', (err) => fail(new TypeError('request failed', { cause: err })));
      res.on('close', () => {
        if (!res.complete)
          fail(new TypeError('request failed', { cause: new Error('the answer was cut short') }));
      });
    });
    let refused: Error | undefined;
    const refusal = req.refusal;
    outgoing.on('error', (err) =>
      fail(err === refused ? err : new TypeError('request failed', { cause: err })),
    );
    signal.addEventListener('abort', onAbort, { once: true });
    endWhenConnected(
      outgoing,
      req.body,
      refusal &&
        (() => {
          refused = refusal();
          return refused;
        }),
    );
  });
}

/** The answer's body as sent, or unpacked where its Content-Encoding says it is compressed. */
function decoded(res: IncomingMessage, onError: (err: Error) => void): Readable {
  const encoding = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  if (encoding === '' || encoding === 'identity') return res;
  const zlib = nodeZlib();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  if (!decoder) return res;
  decoder.on('error', onError);
  return res.pipe(decoder);
}

function incomingHeaders(raw: IncomingHttpHeaders): ResponseHeaders {
  return {
    get(name) {
      const value = raw[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}

/** An injected fetch (tests) as a transport: the body read with the same cap. */
export function fetchTransport(fetchFn: typeof fetch): Transport {
  return async (url, req, maxBytes) => {
    const headers: Record<string, string> = {};
    req.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const res = await fetchFn(url, {
      method: req.method,
      headers,
      signal: req.signal,
      redirect: 'manual',
      ...(req.body !== undefined ? { body: req.body } : {}),
    });
    return {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
      text: await readCapped(res, maxBytes),
    };
  };
}

async function readCapped(res: Response, maxBytes: number): Promise<string> {
  if (!res.body) return '';
  if (Number(res.headers.get('content-length')) > maxBytes) {
    await res.body.cancel().catch(() => {});
    throw new ResponseTooLarge();
  }
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new ResponseTooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
