import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import { endWhenConnected } from '../end-when-connected.js';
import { nodeHttp, nodeHttps, nodeTls } from '../node-modules.js';
import { agentProxyOptions, proxyFailure } from '../proxy.js';
import type { ClusterAccess } from './config.js';
import type { Credential } from './credentials.js';
import {
  KubeApiError,
  KubeResponseTooLargeError,
  KubeUnauthorizedError,
  KubeUnreachableError,
  NotLeaderError,
} from './errors.js';
import { ListStreamParser } from './list-stream.js';
import { decodeProtobufStatus } from './status.js';

/**
 * A lean HTTP/1.1 keep-alive transport for the hot path (thousands of Node patches per pass), on
 * Node's own http(s) client. client-node's generated API cost ~1.7 ms of CPU per request and ~90 MB
 * to load; undici's Pool added ~6 MB to ccm's start-up, node:https is already in the binary.
 * TLS and credentials come from the kubeconfig (config.ts, credentials.ts); a request the server
 * answers with 401 is retried once when a fresh credential could be had (exec plugin re-run, file
 * re-read).
 */
export interface KubeRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  body?: unknown;
  contentType?: string;
  /**
   * The caller does not read the response: ask for protobuf, the server's cheapest encoding, and
   * skip parsing (measured: a fifth less API server CPU on a 5,000-Node pass).
   */
  discardResponse?: boolean;
  /** Writes that must pass even when the write gate is shut (the Lease itself). */
  ungated?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A list as the API server answers it, or whatever else came with a 200. */
export interface ListAnswer<T> {
  kind?: string;
  items?: T[] | null;
  code?: number;
  message?: string;
}

/**
 * The items of a list. A 200 that is no list (a Status, `{}`, a proxy's own answer) fails instead of
 * reading as "none"; `null` is how Go writes an empty list.
 */
export function itemsOf<T>(list: ListAnswer<T> | undefined, path: string): T[] {
  if (Array.isArray(list?.items)) return list.items;
  if (list?.items === null && list.kind !== 'Status') return [];
  const what = list?.kind ? `a ${list.kind}${list.message ? ` (${list.message})` : ''}` : 'no list';
  throw new KubeApiError(`GET ${path}: the answer is ${what}`, list?.code ?? 0);
}

/** A list's own metadata, read from one page. */
export interface ListMeta {
  continue: string;
  resourceVersion: string;
}

export interface TransportOptions {
  /** Sent as User-Agent, so the audit log tells replicas apart. Default "ccm". */
  userAgent?: string;
  /** Asked before every write: throws NotLeaderError when this process may not write. */
  mayWrite?: () => boolean;
  /** Told when the API server stops or starts answering (not per request). */
  onReachable?: (reachable: boolean, detail: string) => void;
  /**
   * kubectl's --request-timeout: the whole time one request (not a watch) may take, replacing each
   * request's own idle limit; 0 waits as long as the server takes.
   */
  requestTimeoutMs?: number;
  /**
   * Called with what is being waited for, and for how long at most, when an answer takes longer than
   * `waitingNoticeMs`, and with undefined once it came (or the request ended without one).
   */
  onWaiting?: (what: string | undefined) => void;
  /** How long an answer may take before `onWaiting` hears of it; default 1 s (a terminal's line). */
  waitingNoticeMs?: number;
}

const WAITING_NOTICE_MS = 1000;

const TIMEOUT_MS = 30_000;
const MAX_CONNECTIONS = 64;
/**
 * The most read of one answer (or, of a streamed list, between two items), and of one watch event:
 * an endpoint that streams without end must fail the request, not grow the heap until the controller
 * is killed and restarted into the same. A page of 500 Nodes is a few MiB; the API server itself
 * refuses objects above 1.5 MiB (etcd's request limit), so one event is far below the line cap.
 */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;
export const MAX_LINE_BYTES = 16 * 1024 * 1024;
/**
 * The most read of one unpaginated list (listAll's fallback when a `continue` token expired): a whole
 * cluster's Nodes in one answer, ~15 KB each with their images. A page (`limit` 500) is held to
 * MAX_BODY_BYTES like any answer: its items are parsed one by one, but the caller keeps a copy of each,
 * so an endpoint sending items without end must fail too.
 */
export const MAX_FULL_LIST_BYTES = 256 * 1024 * 1024;
const MiB = 1024 * 1024;

/** How the response body is consumed. */
type BodyMode =
  | { kind: 'buffer' }
  | { kind: 'discard' }
  | { kind: 'list'; parser: () => ListStreamParser<void>; maxBytes: number }
  | { kind: 'lines'; onLine: (line: string) => void };

interface Response {
  status: number;
  contentType: string;
  /** The whole body, unless it was discarded or streamed. */
  body?: Buffer;
  streamed?: boolean;
  /** The API server's clock when it answered (its Date header), ms; whole seconds. */
  serverTime?: number;
}

export class KubeTransport {
  readonly server: string;
  private readonly url: URL;
  private agent?: HttpAgent;
  /** The client certificate the agent's connections present; a new one needs new connections. */
  private agentCert?: string;
  private readonly retired = new Set<HttpAgent>();
  private reachable = true;

  constructor(
    private readonly access: ClusterAccess,
    private readonly transportOptions: TransportOptions = {},
  ) {
    this.server = access.server;
    this.url = new URL(this.server);
  }

  /**
   * Where to look when the API server does not answer, or something else does. In a Pod the address
   * is the `kubernetes` Service's, which kube-proxy (or what replaces it) forwards on each Node: no
   * kubeconfig flag is involved.
   */
  get accessHint(): string {
    return this.access.inCluster
      ? "that is the `kubernetes` Service (this Pod's KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT): check that kube-proxy (or what replaces it) forwards it to the API server on this Node, or set both in the Pod's env to the API server's own address and port"
      : 'check --kubeconfig and --context';
  }

  private agentFor(credential: Credential): HttpAgent {
    if (!this.agent || this.agentCert !== credential.cert) {
      const previous = this.agent;
      const { ca, rejectUnauthorized, servername } = this.access.tls;
      // Through the proxy the kubeconfig or the environment names (ClusterAccess.proxy), or none.
      const common = {
        keepAlive: true,
        maxSockets: MAX_CONNECTIONS,
        scheduling: 'lifo' as const,
        ...agentProxyOptions(this.access.proxy, this.url),
      };
      this.agent =
        this.url.protocol === 'https:'
          ? new (nodeHttps().Agent)({
              ...common,
              // One TLS context (CA store, client certificate) shared by every connection, not one each.
              secureContext: nodeTls().createSecureContext({
                ca,
                cert: credential.cert,
                key: credential.key,
              }),
              rejectUnauthorized,
              servername,
            })
          : new (nodeHttp().Agent)(common);
      this.agentCert = credential.cert;
      if (previous) this.retire(previous);
    }
    return this.agent;
  }

  /** Requests already sent on the old connections finish (or time out) first. */
  private retire(agent: HttpAgent): void {
    this.retired.add(agent);
    setTimeout(() => {
      agent.destroy();
      this.retired.delete(agent);
    }, TIMEOUT_MS + 1000).unref();
  }

  /** False from a failed connection until the next answer. */
  get isReachable(): boolean {
    return this.reachable;
  }

  private markReachable(reachable: boolean, detail: string): void {
    if (reachable === this.reachable) return;
    this.reachable = reachable;
    if (this.agent) {
      // Across a partition pooled keep-alive connections may be dead without being closed, those opened
      // while it lasted too: each request reusing one would wait out its timeout. Whenever the server's
      // reachability changes, new requests get new connections.
      this.retire(this.agent);
      this.agent = undefined;
    }
    this.transportOptions.onReachable?.(reachable, detail);
  }

  async request<T>(req: KubeRequest): Promise<T> {
    const mode: BodyMode = req.discardResponse ? { kind: 'discard' } : { kind: 'buffer' };
    const { status, contentType, body } = await this.exchange(req, mode);
    if (status >= 200 && status < 300) {
      const text = body?.toString('utf8');
      return (text && contentType.includes('json') ? JSON.parse(text) : undefined) as T;
    }
    throw this.apiError(req, status, body);
  }

  /**
   * As `request`, with the API server's clock when it answered (its HTTP Date header: whole seconds,
   * undefined when absent), and `allowed` statuses besides 2xx answered rather than thrown (a 404 of
   * an object that does not exist yet).
   */
  async requestDated<T>(
    req: KubeRequest,
    allowed: readonly number[] = [],
  ): Promise<{ status: number; body?: T; serverTime?: number }> {
    const { status, contentType, body, serverTime } = await this.exchange(req, { kind: 'buffer' });
    if ((status >= 200 && status < 300) || allowed.includes(status)) {
      const text = body?.toString('utf8');
      const parsed =
        status < 300 && text && contentType.includes('json') ? (JSON.parse(text) as T) : undefined;
      return {
        status,
        ...(parsed !== undefined ? { body: parsed } : {}),
        ...(serverTime ? { serverTime } : {}),
      };
    }
    throw this.apiError(req, status, body);
  }

  /**
   * GETs one page of a list and hands each item to `onItem` while the body streams in
   * (list-stream.ts); returns the list's metadata: `continue` (empty on the last page) and
   * `resourceVersion`.
   */
  async listPage(
    path: string,
    onItem: (item: unknown) => void,
    options: { signal?: AbortSignal; timeoutMs?: number; maxBytes?: number } = {},
  ): Promise<ListMeta> {
    const { maxBytes = MAX_BODY_BYTES, ...rest } = options;
    const req: KubeRequest = { method: 'GET', path, ...rest };
    let parser: ListStreamParser<void> | undefined;
    const { status, body } = await this.exchange(req, {
      kind: 'list',
      maxBytes,
      parser: () => {
        parser = new ListStreamParser(onItem);
        return parser;
      },
    });
    if (status < 200 || status >= 300 || !parser) throw this.apiError(req, status, body);
    const list = parser.end<
      ListAnswer<unknown> & { metadata?: { continue?: string; resourceVersion?: string } }
    >();
    // A 200 that is no list is not an empty last page: read as one, it would tell an informer that
    // everything on the pages not read was deleted.
    itemsOf(list, path.split('?')[0] as string);
    const { metadata } = list;
    return { continue: metadata?.continue ?? '', resourceVersion: metadata?.resourceVersion ?? '' };
  }

  /**
   * A streaming GET (watch): calls `onLine` with each newline-delimited JSON document until the
   * server ends the response (resolves) or it fails (rejects). `signal` aborts it.
   */
  async stream(path: string, signal: AbortSignal, onLine: (line: string) => void): Promise<void> {
    // The usual timeout until the answer's headers; the open watch itself has none (the informer's watchdog).
    const req: KubeRequest = { method: 'GET', path, signal };
    const { status, body } = await this.exchange(req, { kind: 'lines', onLine });
    if (status !== 200) {
      throw new KubeApiError(
        `GET ${path.split('?')[0]} (watch): ${statusMessage(body ?? Buffer.alloc(0), status)}`,
        status,
      );
    }
  }

  /** Ends the keep-alive connections (at shutdown). */
  async close(): Promise<void> {
    this.agent?.destroy();
    this.agent = undefined;
    for (const agent of this.retired) agent.destroy();
    this.retired.clear();
  }

  private gate(req: KubeRequest): void {
    const refused = this.refusal(req);
    if (refused) throw refused;
  }

  private gated(req: KubeRequest): boolean {
    return req.method !== 'GET' && !req.ungated && this.transportOptions.mayWrite !== undefined;
  }

  /** The write gate's answer: asked before a request and again once its connection is up. */
  private refusal(req: KubeRequest): NotLeaderError | undefined {
    if (!this.gated(req) || this.transportOptions.mayWrite?.() !== false) return undefined;
    return new NotLeaderError(
      `${req.method} ${req.path.split('?')[0]} refused: this replica is not the leader`,
    );
  }

  private apiError(req: KubeRequest, status: number, body: Buffer | undefined): KubeApiError {
    const what = `${req.method} ${req.path.split('?')[0]}: ${statusMessage(body ?? Buffer.alloc(0), status)}`;
    if (status === 401) {
      const who = this.access.inCluster
        ? "this Pod's ServiceAccount token"
        : `the credentials of user ${this.access.user || '(none)'} (context ${this.access.context})`;
      return new KubeUnauthorizedError(
        `${what}: the API server at ${this.server} does not accept ${who}; ${this.access.inCluster ? 'check the ServiceAccount and its token' : 'check --kubeconfig and --context'}`,
        status,
      );
    }
    return new KubeApiError(what, status);
  }

  /** Sends the request; a 401 is retried once when the credentials could be refreshed. */
  private async exchange(req: KubeRequest, mode: BodyMode): Promise<Response> {
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const credentials = this.access.credentials;
    let credential = await credentials.current();
    // Getting a credential can take long (an exec plugin): the replica may have stopped leading since.
    this.gate(req);
    let res = await this.send(req, body, credential, mode);
    if (res.status === 401 && (await credentials.rejected(credential))) {
      credential = await credentials.current();
      this.gate(req);
      res = await this.send(req, body, credential, mode);
    }
    return res;
  }

  private send(
    req: KubeRequest,
    body: string | undefined,
    credential: Credential,
    mode: BodyMode,
  ): Promise<Response> {
    const headers: Record<string, string | string[] | number> = {
      ...credential.headers,
      accept: req.discardResponse
        ? 'application/vnd.kubernetes.protobuf, application/json'
        : 'application/json',
      'user-agent': this.transportOptions.userAgent ?? 'ccm',
      ...(body
        ? { 'content-type': req.contentType ?? 'application/json', 'content-length': Buffer.byteLength(body) }
        : {}),
    };
    const basePath = this.url.pathname.replace(/\/$/, '');
    const request = this.url.protocol === 'https:' ? nodeHttps().request : nodeHttp().request;
    const limit = mode.kind === 'lines' ? undefined : this.transportOptions.requestTimeoutMs;
    const timeout = limit ?? req.timeoutMs ?? TIMEOUT_MS;
    const { signal } = req;
    const { onWaiting, waitingNoticeMs = WAITING_NOTICE_MS } = this.transportOptions;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    let agent: HttpAgent;
    try {
      agent = this.agentFor(credential);
    } catch (err) {
      // A proxy this Node cannot tunnel through (agentProxyOptions): nothing was sent.
      return Promise.reject(err);
    }
    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      let waitingShown = false;
      let waitingTimer = onWaiting
        ? setTimeout(() => {
            waitingShown = true;
            onWaiting(
              `waiting for the Kubernetes API server at ${this.server} (${req.method} ${req.path.split('?')[0]}): ${waitLimit(limit, timeout)}`,
            );
          }, waitingNoticeMs)
        : undefined;
      // The answer has begun (a long list streams in, a watch stays open): no longer waited for.
      const answered = () => {
        clearTimeout(waitingTimer);
        waitingTimer = undefined;
        if (waitingShown) onWaiting?.(undefined);
        waitingShown = false;
      };
      const deadline =
        limit !== undefined && limit > 0
          ? setTimeout(() => {
              r.destroy(new Error(`no answer within ${limit / 1000}s, the --request-timeout`));
            }, limit)
          : undefined;
      // Node's socket timeout counts the TCP connect and the TLS handshake apart (a server that
      // accepts and never answers took twice the limit): the answer's headers have their own clock.
      const answerDeadline =
        deadline === undefined && timeout > 0
          ? setTimeout(() => r.destroy(new Error(`no answer within ${timeout / 1000}s`)), timeout)
          : undefined;
      const done = (fn: () => void) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        answered();
        clearTimeout(deadline);
        clearTimeout(answerDeadline);
        fn();
      };
      const fail = (err: Error & { code?: string }) =>
        done(() =>
          reject(
            signal?.aborted
              ? abortError(signal)
              : err instanceof NotLeaderError
                ? err
                : this.unreachable(err),
          ),
        );
      const succeed = (res: Response) => {
        this.markReachable(true, 'answering again');
        done(() => resolve(res));
      };
      const r = request(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: this.url.port,
          path: `${basePath}${req.path}`,
          method: req.method,
          headers,
          agent,
          ...(timeout > 0 ? { timeout } : {}),
        },
        (res: IncomingMessage) => {
          clearTimeout(answerDeadline);
          answered();
          const status = res.statusCode ?? 0;
          const contentType = res.headers['content-type'] ?? '';
          this.markReachable(true, 'answering again');
          res.on('error', fail);
          // Closed before the body ended (the server went away mid-watch): settle anyway ('end' settles first otherwise).
          res.on('close', () => fail(closedEarly()));
          const ok = status >= 200 && status < 300;
          if (ok && mode.kind === 'discard') {
            res.on('end', () => succeed({ status, contentType })).resume();
            return;
          }
          const stop = (err: unknown) => {
            res.destroy();
            done(() => reject(err));
          };
          const tooLarge = (what: string, limit: number) =>
            stop(
              new KubeResponseTooLargeError(
                `${req.method} ${req.path.split('?')[0]}: ${what} is larger than ${limit / MiB} MiB; ccm stopped reading it (is ${this.server} a Kubernetes API server?)`,
              ),
            );
          if (ok && mode.kind === 'list' && contentType.includes('json')) {
            const parser = mode.parser();
            let sinceItem = 0;
            let items = 0;
            let size = 0;
            res.on('data', (c: Buffer) => {
              try {
                parser.write(c);
              } catch (err) {
                return stop(err);
              }
              sinceItem = parser.items === items ? sinceItem + c.length : 0;
              items = parser.items;
              size += c.length;
              if (sinceItem > MAX_BODY_BYTES) tooLarge('an item of the list', MAX_BODY_BYTES);
              // sinceItem lags by the chunk an item ended in: most of the answer since then is one item.
              else if (size > mode.maxBytes)
                tooLarge(sinceItem > size / 2 ? 'an item of the list' : 'the list', mode.maxBytes);
            });
            res.on('end', () => succeed({ status, contentType, streamed: true }));
            return;
          }
          if (status === 200 && mode.kind === 'lines') {
            r.setTimeout(0);
            // The unfinished line, as the chunks it came in (never re-scanned: only new chunks are searched).
            let parts: Buffer[] = [];
            let pending = 0;
            const emit = (line: Buffer) => {
              const text = line.toString('utf8');
              if (text.trim()) mode.onLine(text);
            };
            res.on('data', (chunk: Buffer) => {
              let start = 0;
              try {
                for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
                  if (pending + nl - start > MAX_LINE_BYTES) break;
                  const tail = chunk.subarray(start, nl);
                  emit(parts.length > 0 ? Buffer.concat([...parts, tail]) : tail);
                  parts = [];
                  pending = 0;
                  start = nl + 1;
                  if (settled) return;
                }
              } catch (err) {
                return stop(err);
              }
              const rest = chunk.subarray(start);
              if (rest.length > 0) {
                parts.push(rest);
                pending += rest.length;
              }
              if (pending > MAX_LINE_BYTES) tooLarge('a line of the watch', MAX_LINE_BYTES);
            });
            res.on('end', () => {
              if (pending > 0 && !settled) {
                try {
                  emit(Buffer.concat(parts));
                } catch (err) {
                  return stop(err);
                }
              }
              succeed({ status, contentType, streamed: true });
            });
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_BODY_BYTES) tooLarge('the answer', MAX_BODY_BYTES);
            else chunks.push(c);
          });
          const date = Date.parse(res.headers.date ?? '');
          res.on('end', () =>
            succeed({
              status,
              contentType,
              body: Buffer.concat(chunks),
              ...(Number.isNaN(date) ? {} : { serverTime: date }),
            }),
          );
        },
      );
      const onAbort = () => r.destroy(abortError(signal as AbortSignal));
      signal?.addEventListener('abort', onAbort, { once: true });
      r.on('timeout', () => r.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
      r.on('error', fail);
      r.on('close', () => fail(closedEarly()));
      endWhenConnected(r, body, this.gated(req) ? () => this.refusal(req) : undefined);
    });
  }

  private unreachable(err: Error & { code?: string }): KubeUnreachableError {
    // Told as the proxy's failure: the proxy (never its credentials), where it was set, what to check.
    const atProxy = proxyFailure(err, this.access.proxy, this.url);
    const reason = err.code ?? err.message;
    this.markReachable(false, atProxy?.message ?? reason);
    if (atProxy) {
      return new KubeUnreachableError(
        `cannot reach the Kubernetes API server at ${this.server}: ${atProxy.message}`,
      );
    }
    return new KubeUnreachableError(
      `cannot reach the Kubernetes API server at ${this.server} (${reason}); ${this.accessHint}`,
    );
  }
}

/** How long a request waits at most, for the waiting line: "up to 30 s", "up to 5 s (--request-timeout)". */
function waitLimit(flag: number | undefined, timeout: number): string {
  if (flag === 0) return 'no time limit (--request-timeout 0)';
  if (flag !== undefined) return `up to ${flag / 1000} s (--request-timeout)`;
  return timeout > 0 ? `up to ${timeout / 1000} s` : 'no time limit';
}

function closedEarly(): Error {
  return Object.assign(new Error('connection closed'), { code: 'ECONNRESET' });
}

function abortError(signal: AbortSignal): Error {
  const reason = signal.reason as unknown;
  if (reason instanceof Error) return reason;
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

/**
 * The message of the API server's Status, JSON or protobuf (writes accept protobuf, and the server
 * answers errors in the accepted encoding), or the HTTP status when the body is neither.
 */
export function statusMessage(body: Buffer, status: number): string {
  const fromProtobuf = decodeProtobufStatus(body)?.message;
  if (fromProtobuf) return fromProtobuf.split('\n')[0] as string;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message.split('\n')[0] as string;
  } catch {
    // not JSON
  }
  return `HTTP ${status} ${nodeHttp().STATUS_CODES[status] ?? ''}`.trim();
}
