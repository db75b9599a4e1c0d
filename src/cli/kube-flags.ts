import type { TransportOptions } from '../kube/transport.js';
import { parseDuration } from './duration.js';
import { expectedText } from './errors.js';

/** What every command that talks to the API server takes from its flags, beside the kubeconfig. */
export interface KubeRequestFlags {
  /** --request-timeout in ms (0: none); undefined keeps each request's own limit. */
  'request-timeout'?: number;
  /** Says what a slow answer is being waited for (undefined: it came); see kubeWaitNotices. */
  onWaiting?: (what: string | undefined) => void;
  /** After how long an answer is slow. */
  waitingNoticeMs?: number;
}

export function transportOptionsFrom(flags: KubeRequestFlags): TransportOptions {
  return {
    ...(flags['request-timeout'] !== undefined ? { requestTimeoutMs: flags['request-timeout'] } : {}),
    ...(flags.onWaiting ? { onWaiting: flags.onWaiting } : {}),
    ...(flags.waitingNoticeMs !== undefined ? { waitingNoticeMs: flags.waitingNoticeMs } : {}),
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
 * while at least one answer is overdue, erased once none is. It is cut to the terminal's width: a
 * line the terminal wrapped would leave its first row on screen when erased.
 */
export function waitingLine(stream: NodeJS.WriteStream = process.stderr): (what: string | undefined) => void {
  let overdue = 0;
  return (what) => {
    if (what !== undefined) {
      if (overdue++ === 0) stream.write(fitted(`${what}…`, stream.columns));
    } else if (--overdue === 0) stream.write('\r\u001b[K');
  };
}

/** `line` within `columns - 1` cells (the last one would wrap on some terminals), cut with "…". */
function fitted(line: string, columns: number | undefined): string {
  const room = (columns ?? 80) - 1;
  const chars = [...line];
  return chars.length <= room
    ? line
    : `${chars
        .slice(0, Math.max(1, room - 1))
        .join('')
        .trimEnd()}…`;
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

/**
 * What a one-pass command shows while the API server is slow to answer, the same in every command:
 * on a terminal the erasable line above after 1 s; anywhere else (a CronJob's log, a pipe) one
 * `ccm: waiting for …` line on stderr after 10 s, as for the cloud (waitNotices), and not again while
 * some answer is still overdue (a pass sends many requests at once).
 */
export function kubeWaitNotices(
  progress: boolean,
  stream: NodeJS.WriteStream = process.stderr,
): Required<Pick<KubeRequestFlags, 'onWaiting' | 'waitingNoticeMs'>> {
  if (progress) return { onWaiting: waitingLine(stream), waitingNoticeMs: 1000 };
  let overdue = 0;
  return {
    onWaiting: (what) => {
      if (what === undefined) overdue--;
      else if (overdue++ === 0) stream.write(`ccm: ${what}\n`);
    },
    waitingNoticeMs: 10_000,
  };
}
