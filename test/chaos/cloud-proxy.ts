/**
 * The one door between the ccm replicas and the cloud simulator. Every replica reads the same
 * credentials Secret, so they all name the same cloud URL, as in production; the proxy tells them
 * apart by the process that owns each connection (the client socket's inode in /proc/net/tcp, found
 * among the replicas' open files). So it can log every cloud request by replica (method, path,
 * status, times), cut one replica off the cloud (a partition) and make the cloud fail for everyone
 * (500, 429 with Retry-After, slow answers, no answer at all).
 *
 * The simulators name their own URL in bodies (OpenStack's catalog, DigitalOcean's page links); the
 * proxy puts its own in their place, so that no replica goes round it.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface CloudRequest {
  /** The replica that sent it ('unknown' if its process could not be told). */
  replica: string;
  method: string;
  path: string;
  /** Date.now() when it reached the proxy, and when its answer left (undefined: none). */
  at: number;
  answeredAt?: number;
  status?: number;
  /** What the proxy made of it: forwarded, or the fault that answered it. */
  outcome: 'forwarded' | 'failed' | 'partitioned' | 'hung' | 'upstream-error' | 'lost-answer';
  /** Review 45b: a partitioned request TCP delivered when the partition healed (Date.now()). */
  deliveredAt?: number;
  /** Request bodies of the writes the caller asked to keep (`keepBody`). */
  body?: string;
  /** The answer's body, for those kept requests. */
  answer?: string;
}

export type CloudFault =
  | { kind: 'status'; status: number; retryAfterSeconds?: number }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'hang' }
  /**
   * Review 45b: the cloud does the write, but its answer never reaches ccm (a gateway that times out,
   * a connection reset after the request was handled). Reads pass. Upstream-realistic: a 504 after
   * the work was done is common at cloud APIs.
   */
  | { kind: 'lost-answer'; status?: number };

export interface CloudProxyOptions {
  upstream: string;
  /** The cloud's error body for an injected status (its own shape). */
  errorBody(status: number): unknown;
  /** Whether to keep the request and answer bodies of this request (load balancer creations). */
  keepBody(method: string, path: string): boolean;
}

export interface CloudProxy {
  url: string;
  readonly log: CloudRequest[];
  /** The replica processes it tells apart: name → pid. */
  register(name: string, pid: number): void;
  /** A fault for every replica until `clear()`. */
  fail(fault: CloudFault): void;
  clear(): void;
  /** Clears `fault` if it is still the one in force (a later one may have replaced it). */
  clearIf(fault: CloudFault): void;
  /** Requests from this replica go unanswered, on open and new connections, until `heal`. */
  partition(name: string, options?: { deliverOnHeal?: boolean }): void;
  heal(name: string): void;
  /** Review 45b: called with each request as it reaches the proxy, before any fault (a test's trigger). */
  tap?: (entry: CloudRequest) => void;
  close(): Promise<void>;
}

/** The inode of the loopback TCP socket whose local port is `localPort` and remote port `remotePort`. */
function socketInode(localPort: number, remotePort: number): string | undefined {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[1]?.endsWith(`:${hex(localPort)}`) && f[2]?.endsWith(`:${hex(remotePort)}`)) return f[9];
    }
  }
  return undefined;
}

function owns(pid: number, inode: string): boolean {
  const target = `socket:[${inode}]`;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return true;
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // the process is gone
  }
  return false;
}

export async function startCloudProxy(options: CloudProxyOptions): Promise<CloudProxy> {
  const replicas = new Map<string, number>();
  const partitioned = new Set<string>();
  /** Partitions whose held requests TCP delivers once the network heals (the client still waiting). */
  const delivering = new Set<string>();
  const queued = new Map<string, (() => void)[]>();
  const log: CloudRequest[] = [];
  const held = new Set<ServerResponse>();
  let fault: CloudFault | undefined;
  let url = '';
  const upstreamOrigin = new URL(options.upstream).origin;

  const whose = (socket: Socket): string => {
    const cached = (socket as Socket & { replica?: string }).replica;
    if (cached) return cached;
    const inode = socketInode(socket.remotePort ?? 0, socket.localPort ?? 0);
    let name = 'unknown';
    if (inode) for (const [n, pid] of replicas) if (owns(pid, inode)) name = n;
    (socket as Socket & { replica?: string }).replica = name;
    return name;
  };

  const hold = (res: ServerResponse) => {
    held.add(res);
    res.on('close', () => held.delete(res));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const entry: CloudRequest = {
      replica: whose(req.socket),
      method,
      path,
      at: Date.now(),
      outcome: 'forwarded',
    };
    const keep = options.keepBody(method, path);
    if (keep) entry.body = body.toString('utf8');
    log.push(entry);
    proxy.tap?.(entry);
    const now = fault;
    if (partitioned.has(entry.replica)) {
      entry.outcome = 'partitioned';
      if (delivering.has(entry.replica)) {
        // The bytes are in the network: delivered when it heals, as TCP retransmits, if the client
        // still waits for them (a client that gave up reset its connection).
        const list = queued.get(entry.replica) ?? [];
        list.push(() => {
          if (res.destroyed || req.socket.destroyed) return;
          entry.outcome = 'forwarded';
          entry.deliveredAt = Date.now();
          forward(entry, req, res, body, keep, undefined);
        });
        queued.set(entry.replica, list);
        return;
      }
      return hold(res);
    }
    if (now?.kind === 'hang') {
      entry.outcome = 'hung';
      return hold(res);
    }
    if (now?.kind === 'status') {
      entry.outcome = 'failed';
      entry.status = now.status;
      entry.answeredAt = Date.now();
      res
        .writeHead(now.status, {
          'content-type': 'application/json',
          ...(now.retryAfterSeconds !== undefined ? { 'retry-after': String(now.retryAfterSeconds) } : {}),
        })
        .end(JSON.stringify(options.errorBody(now.status)));
      return;
    }
    forward(entry, req, res, body, keep, now);
  };

  const forward = (
    entry: CloudRequest,
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    keep: boolean,
    now: CloudFault | undefined,
  ) => {
    const { method, path } = entry;
    // Slow: the cloud does the work at once and answers late, as an overloaded API does; a client
    // that gives up meanwhile does not know whether its change was made.
    const headers = { ...req.headers };
    delete headers.host;
    const upstream = request(`${options.upstream}${path}`, { method, headers });
    upstream.on('error', () => {
      entry.outcome = 'upstream-error';
      if (!res.headersSent) res.writeHead(502).end();
    });
    upstream.on('response', async (answer) => {
      const parts: Buffer[] = [];
      for await (const c of answer) parts.push(c as Buffer);
      let text = Buffer.concat(parts).toString('utf8').replaceAll(upstreamOrigin, url);
      if (now?.kind === 'slow') await new Promise((r) => setTimeout(r, now.delayMs));
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(answer.headers)) {
        if (v === undefined || k === 'content-length' || k === 'transfer-encoding' || k === 'connection')
          continue;
        out[k] = typeof v === 'string' ? v.replaceAll(upstreamOrigin, url) : v;
      }
      if (keep) entry.answer = text;
      entry.status = answer.statusCode ?? 0;
      entry.answeredAt = Date.now();
      if (now?.kind === 'lost-answer' && method !== 'GET') {
        // The work is done (entry.status says how it went); ccm never learns it.
        entry.outcome = 'lost-answer';
        if (now.status) {
          res
            .writeHead(now.status, { 'content-type': 'application/json' })
            .end(JSON.stringify(options.errorBody(now.status)));
        } else res.socket?.destroy();
        return;
      }
      if (res.destroyed) return;
      text = text ?? '';
      res.writeHead(entry.status, { ...out, 'content-length': String(Buffer.byteLength(text)) }).end(text);
    });
    upstream.end(body);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const proxy: CloudProxy = {
    url,
    log,
    register: (name, pid) => {
      replicas.set(name, pid);
    },
    fail: (f) => {
      fault = f;
    },
    clear: () => {
      fault = undefined;
    },
    clearIf: (f) => {
      if (fault === f) fault = undefined;
    },
    partition: (name, opts) => {
      partitioned.add(name);
      if (opts?.deliverOnHeal) delivering.add(name);
    },
    heal: (name) => {
      partitioned.delete(name);
      delivering.delete(name);
      const list = queued.get(name) ?? [];
      queued.delete(name);
      for (const deliver of list) deliver();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
