/**
 * The HTTP core the cloud simulators share: listening on loopback and stopping, reading a body,
 * fault injection (which request fails, how often, after how many) and the route table each
 * simulator declares its API in. What a cloud answers — its handlers, its error shapes, its request
 * log's fields — stays in its own folder.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface Listening {
  server: Server;
  /** http://127.0.0.1:<port> (https with `tls`). */
  url: string;
  /** Ends every open connection (a hanging fault's too) and stops listening. */
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 on a free port; with `tls` (PEM key and certificate, and any other option of
 * node:https, e.g. asking for a client certificate) over HTTPS.
 */
export async function listen(
  handler: RequestListener,
  tls?: HttpsOptions & { key: string; cert: string },
): Promise<Listening> {
  const server = tls ? createHttpsServer(tls, handler) : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    server,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** A path pattern: a string must be equal to the path (without query), a RegExp must match it. */
export function pathMatches(pattern: string | RegExp | undefined, path: string): boolean {
  return pattern === undefined || (typeof pattern === 'string' ? pattern === path : pattern.test(path));
}

/** What every cloud's fault has: which requests it hits, how many it lets through, how often it fires. */
export interface FaultRule {
  method?: string;
  path?: string | RegExp;
  /** How many matching requests it hits (each cloud has its default: once, or every one). */
  times?: number;
  /** Matching requests let through before it fires. */
  skip?: number;
}

export type Injected<F> = F & { seen: number; fired: number };

/**
 * Injected faults, first added first matched. A request takes the first fault whose method and path
 * (and the cloud's own condition) match, that has let its `skip` requests through and fired fewer
 * than its `times`.
 */
export class FaultList<F extends FaultRule> {
  /** The faults in order, with their counts; emptied by `clear()` (or `entries.length = 0`). */
  readonly entries: Injected<F>[] = [];

  constructor(private readonly defaultTimes: number) {}

  add(fault: F): void {
    this.entries.push({ ...fault, seen: 0, fired: 0 });
  }

  clear(): void {
    this.entries.length = 0;
  }

  take(method: string, path: string, also: (fault: F) => boolean = () => true): F | undefined {
    for (const f of this.entries) {
      if ((f.method && f.method !== method) || !pathMatches(f.path, path) || !also(f)) continue;
      if (f.seen++ < (f.skip ?? 0)) continue;
      if (f.fired >= (f.times ?? this.defaultTimes)) continue;
      f.fired++;
      return f;
    }
    return undefined;
  }
}

/**
 * One row of a simulator's route table: the method it answers (every method when absent: the handler
 * then answers a wrong one itself, in the order the real API checks it) and the whole path it
 * matches. `H` is the cloud's handler signature.
 */
export interface Route<H> {
  method?: string;
  path: RegExp;
  handle: H;
}

/** The first row of `routes` whose method and path match, with the path's match; none: undefined. */
export function findRoute<R extends Route<unknown>>(
  routes: readonly R[],
  method: string,
  path: string,
): { route: R; match: RegExpExecArray } | undefined {
  for (const route of routes) {
    if (route.method !== undefined && route.method !== method) continue;
    const match = route.path.exec(path);
    if (match) return { route, match };
  }
  return undefined;
}
