import type { KubeTransport } from './transport.js';

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/**
 * Polls the API server's /readyz until it answers 200 (a restarted kube-apiserver or kubelet takes
 * a while). Returns how long it took; throws the last error once the timeout has passed.
 */
export async function waitUntilReady(http: KubeTransport, options: WaitOptions): Promise<number> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = options.now ?? Date.now;
  const started = now();
  for (;;) {
    try {
      await http.request({ method: 'GET', path: '/readyz' });
      return now() - started;
    } catch (err) {
      if (now() - started >= options.timeoutMs) {
        throw new Error(
          `the API server did not become ready within ${Math.round(options.timeoutMs / 1000)}s: ${(err as Error).message}`,
        );
      }
    }
    await sleep(options.intervalMs ?? 2000);
  }
}
