import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, STATUS_CODES } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { ClusterAccess } from './config.js';
import type { Credential } from './credentials.js';
import { KubeApiError, KubeUnreachableError } from './errors.js';
import { ListStreamParser } from './list-stream.js';

/**
 * A lean HTTP/1.1 keep-alive transport for the hot path (thousands of Node patches per pass), on
 * Node's own http(s) client. client-node's generated API cost ~1.7 ms of CPU per request and ~90 MB
 * to load; undici's Pool added ~6 MB to ccm's start-up, node:https is already in the binary.
 * TLS and credentials come from the kubeconfig (config.ts, credentials.ts); a request the server
 * answers with 401 is retried once when a fresh credential could be had (exec plugin re-run, file
 * re-read).
 */
export interface KubeRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: unknown;
  contentType?: string;
  /**
   * The caller does not read the response: ask for protobuf, the server's cheapest encoding, and
   * skip parsing (measured: a fifth less API server CPU on a 5,000-Node pass).
   */
  discardResponse?: boolean;
}

const TIMEOUT_MS = 30_000;
const MAX_CONNECTIONS = 64;

interface Response {
  status: number;
  contentType: string;
  /** Undefined when the response was discarded. */
  text?: string;
}

export class KubeTransport {
  readonly server: string;
  private readonly url: URL;
  private agent?: HttpAgent;
  /** The client certificate the agent's connections present; a new one needs new connections. */
  private agentCert?: string;

  constructor(private readonly access: ClusterAccess) {
    this.server = access.server;
    this.url = new URL(this.server);
  }

  private agentFor(credential: Credential): HttpAgent {
    if (!this.agent || this.agentCert !== credential.cert) {
      const previous = this.agent;
      const { ca, rejectUnauthorized, servername } = this.access.tls;
      const common = { keepAlive: true, maxSockets: MAX_CONNECTIONS, scheduling: 'lifo' as const };
      this.agent =
        this.url.protocol === 'https:'
          ? new HttpsAgent({
              ...common,
              // One TLS context (CA store, client certificate) shared by every connection, not one each.
              secureContext: createSecureContext({ ca, cert: credential.cert, key: credential.key }),
              rejectUnauthorized,
              servername,
            })
          : new HttpAgent(common);
      this.agentCert = credential.cert;
      // Requests already sent on the old connections finish (or time out) first.
      if (previous) setTimeout(() => previous.destroy(), TIMEOUT_MS + 1000).unref();
    }
    return this.agent;
  }

  async request<T>(req: KubeRequest): Promise<T> {
    const { status, contentType, text } = await this.exchange(req);
    if (status >= 200 && status < 300) {
      return (text && contentType.includes('json') ? JSON.parse(text) : undefined) as T;
    }
    throw this.apiError(req, status, text);
  }

  /**
   * GETs one page of a list and hands each item to `onItem` while the body streams in
   * (list-stream.ts); returns the list's `metadata.continue`, empty on the last page.
   */
  async listPage(path: string, onItem: (item: unknown) => void): Promise<string> {
    const req: KubeRequest = { method: 'GET', path };
    let parser: ListStreamParser<void> | undefined;
    const { status, text } = await this.exchange(req, () => {
      parser = new ListStreamParser(onItem);
      return parser;
    });
    if (status < 200 || status >= 300 || !parser) throw this.apiError(req, status, text);
    return parser.end<{ metadata?: { continue?: string } }>().metadata?.continue ?? '';
  }

  private apiError(req: KubeRequest, status: number, text: string | undefined): KubeApiError {
    return new KubeApiError(
      `${req.method} ${req.path.split('?')[0]}: ${statusMessage(text ?? '', status)}`,
      status,
    );
  }

  /** Sends the request; a 401 is retried once when the credentials could be refreshed. */
  private async exchange(req: KubeRequest, stream?: () => ListStreamParser<void>): Promise<Response> {
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const credentials = this.access.credentials;
    let credential = await credentials.current();
    let res = await this.send(req, body, credential, stream);
    if (res.status === 401 && (await credentials.rejected(credential))) {
      credential = await credentials.current();
      res = await this.send(req, body, credential, stream);
    }
    return res;
  }

  private send(
    req: KubeRequest,
    body: string | undefined,
    credential: Credential,
    stream?: () => ListStreamParser<void>,
  ): Promise<Response> {
    const headers: Record<string, string | string[] | number> = {
      ...credential.headers,
      accept: req.discardResponse
        ? 'application/vnd.kubernetes.protobuf, application/json'
        : 'application/json',
      'user-agent': 'ccm',
      ...(body
        ? { 'content-type': req.contentType ?? 'application/json', 'content-length': Buffer.byteLength(body) }
        : {}),
    };
    const basePath = this.url.pathname.replace(/\/$/, '');
    const request = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      const fail = (err: Error & { code?: string }) => reject(this.unreachable(err));
      const r = request(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: this.url.port,
          path: `${basePath}${req.path}`,
          method: req.method,
          headers,
          agent: this.agentFor(credential),
          timeout: TIMEOUT_MS,
        },
        (res: IncomingMessage) => {
          const status = res.statusCode ?? 0;
          const contentType = res.headers['content-type'] ?? '';
          res.on('error', fail);
          const ok = status >= 200 && status < 300;
          if (ok && req.discardResponse) {
            res.on('end', () => resolve({ status, contentType })).resume();
            return;
          }
          if (ok && stream && contentType.includes('json')) {
            const parser = stream();
            res.on('data', (c: Buffer) => {
              try {
                parser.write(c);
              } catch (err) {
                res.destroy();
                reject(err);
              }
            });
            res.on('end', () => resolve({ status, contentType }));
            return;
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status, contentType, text: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      r.on('timeout', () => r.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
      r.on('error', fail);
      r.end(body);
    });
  }

  private unreachable(err: Error & { code?: string }): KubeUnreachableError {
    return new KubeUnreachableError(
      `cannot reach the Kubernetes API server at ${this.server} (${err.code ?? err.message}); check --kubeconfig and --context`,
    );
  }
}

/** The message of a Kubernetes Status object, or the HTTP status when the body is not JSON. */
function statusMessage(text: string, status: number): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message.split('\n')[0] as string;
  } catch {
    // not JSON
  }
  return `HTTP ${status} ${STATUS_CODES[status] ?? ''}`.trim();
}
