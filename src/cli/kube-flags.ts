import type { TransportOptions } from '../kube/transport.js';
import { parseDuration } from './duration.js';
import { expectedText } from './errors.js';

/** What every command that talks to the API server takes from its flags, beside the kubeconfig. */
export interface KubeRequestFlags {
  /** --request-timeout in ms (0: none); undefined keeps each request's own limit. */
  'request-timeout'?: number;
  /** Shows, on a terminal, what a slow answer is being waited for (undefined clears it). */
  onWaiting?: (what: string | undefined) => void;
}

export function transportOptionsFrom(flags: KubeRequestFlags): TransportOptions {
  return {
    ...(flags['request-timeout'] !== undefined ? { requestTimeoutMs: flags['request-timeout'] } : {}),
    ...(flags.onWaiting ? { onWaiting: flags.onWaiting } : {}),
  };
}

/**
 * kubectl's --request-timeout format: a duration with its unit (30s, 2m, 1h), a whole number of
 * seconds, or 0 for no limit.
 */
export function parseRequestTimeout(text: string): number {
  const trimmed = text.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : parseDuration(trimmed);
  if (ms === undefined)
    throw new Error(expectedText('a duration such as 30s or 2m, or 0 for no limit', text));
  return ms;
}

/**
 * A terminal's line for slow answers: "waiting for the Kubernetes API server at https://… (GET /api/v1/nodes)…"
 * while at least one answer is overdue, erased once none is.
 */
export function waitingLine(stream: NodeJS.WriteStream = process.stderr): (what: string | undefined) => void {
  let overdue = 0;
  return (what) => {
    if (what !== undefined) {
      if (overdue++ === 0) stream.write(`${what}…`);
    } else if (--overdue === 0) stream.write('\r\u001b[K');
  };
}

/**
 * What a command shows while a cloud request is slow, and after how long: on a terminal the erasable
 * line above after 3 s; anywhere else (a CronJob's log) one `ccm: waiting for …` line per request
 * after 10 s, so a log says what the time went to.
 */
export function waitNotices(
  progress: boolean,
  stream: NodeJS.WriteStream = process.stderr,
): [(what: string | undefined) => void, number] {
  if (progress) return [waitingLine(stream), 3000];
  // A log line only for a long wait: a few retries of a 503 are the report's business, not the log's.
  return [
    (what) => {
      if (what !== undefined) stream.write(`ccm: ${what}\n`);
    },
    10_000,
  ];
}
