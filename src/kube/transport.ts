import { type IncomingHttpHeaders, STATUS_CODES } from 'node:http';
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { type Dispatcher, Pool } from 'undici';
import { KubeApiError, KubeConfigError, KubeUnreachableError } from './errors.js';
import { decodeProtobufStatus } from './status.js';

/**
 * A lean HTTP/1.1 keep-alive transport for the hot path (thousands of Node patches per pass).
 * client-node's generated API goes through undici's fetch and its object serializer: measured at
 * ~1.7 ms of CPU per request, it made the client the bottleneck of a 5,000-Node pass. Authentication
 * and TLS still come from client-node's KubeConfig (tokens, client certificates, exec plugins).
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

const AUTH_REFRESH_MS = 10_000;
const TIMEOUT_MS = 30_000;
const MAX_CONNECTIONS = 64;

export class KubeTransport {
  readonly server: string;
  private readonly url: URL;
  private pool?: Pool;
  private auth?: { options: RequestOptions; at: number };

  constructor(private readonly kc: KubeConfig) {
    const cluster = kc.getCurrentCluster();
    if (cluster?.proxyUrl) {
      throw new KubeConfigError(
        `the kubeconfig's cluster ${cluster.name} uses proxy-url ${cluster.proxyUrl}, which ccm does not support yet; reach the API server directly`,
      );
    }
    this.server = cluster?.server ?? '';
    this.url = new URL(this.server);
  }

  /** TLS material and auth headers, re-read now and then so rotated tokens are picked up. */
  private async options(): Promise<RequestOptions> {
    if (!this.auth || Date.now() - this.auth.at > AUTH_REFRESH_MS) {
      const options: RequestOptions = { headers: {} };
      await this.kc.applyToHTTPSOptions(options);
      this.auth = { options, at: Date.now() };
      if (!this.pool) {
        const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } =
          options as RequestOptions & {
            servername?: string;
          };
        this.pool = new Pool(this.url.origin, {
          connections: MAX_CONNECTIONS,
          connect: {
            ca,
            cert,
            key,
            pfx,
            passphrase,
            rejectUnauthorized,
            servername,
          } as Pool.Options['connect'],
        });
      }
    }
    return this.auth.options;
  }

  async request<T>(req: KubeRequest): Promise<T> {
    const options = await this.options();
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const basePath = this.url.pathname.replace(/\/$/, '');
    const headers: Record<string, string> = {
      ...(options.headers as Record<string, string>),
      accept: req.discardResponse
        ? 'application/vnd.kubernetes.protobuf, application/json'
        : 'application/json',
      'user-agent': 'ccm',
      ...(body ? { 'content-type': req.contentType ?? 'application/json' } : {}),
    };
    if (options.auth) headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const what = `${req.method} ${req.path.split('?')[0]}`;
    let res: Dispatcher.ResponseData;
    try {
      res = await (this.pool as Pool).request({
        path: `${basePath}${req.path}`,
        method: req.method,
        headers,
        body,
        headersTimeout: TIMEOUT_MS,
        bodyTimeout: TIMEOUT_MS,
      });
    } catch (err) {
      throw this.unreachable(err as Error & { code?: string });
    }
    const status = res.statusCode;
    if (status >= 200 && status < 300 && req.discardResponse) {
      await res.body.dump();
      return undefined as T;
    }
    const answer = Buffer.from(await res.body.arrayBuffer());
    if (status >= 200 && status < 300) {
      const text = answer.toString('utf8');
      return (text && isJson(res.headers) ? JSON.parse(text) : undefined) as T;
    }
    throw new KubeApiError(`${what}: ${statusMessage(answer, status)}`, status);
  }

  private unreachable(err: Error & { code?: string }): KubeUnreachableError {
    return new KubeUnreachableError(
      `cannot reach the Kubernetes API server at ${this.server} (${err.code ?? err.message}); check --kubeconfig and --context`,
    );
  }
}

function isJson(headers: IncomingHttpHeaders): boolean {
  return (headers['content-type'] ?? '').includes('json');
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
  return `HTTP ${status} ${STATUS_CODES[status] ?? ''}`.trim();
}
