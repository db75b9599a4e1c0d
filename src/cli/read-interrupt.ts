import { monotonicMs } from '../clock.js';
import { InterruptedError } from './errors.js';

/**
 * Ctrl-C while a command that only reads waits (the API server, the cloud): the waiting line erased
 * rather than left with ^C after it, one line saying nothing was written, and 130, as `nodes init`
 * does (review 44). Without it the signal ended the process with no line at all.
 */
export async function cancellableRead<T>(progress: boolean, read: () => Promise<T>): Promise<T> {
  let first: number | undefined;
  let cancel: (err: Error) => void = () => {};
  const cancelled = new Promise<never>((_, reject) => {
    cancel = reject;
  });
  const onSigint = () => {
    // A terminal's Ctrl-C reaches this process twice under the Node 20 wrapper (bin/run.js): one.
    if (first !== undefined && monotonicMs() - first < 1000) return;
    first = monotonicMs();
    if (progress && process.stderr.isTTY) process.stderr.write('\r\u001b[K');
    cancel(new InterruptedError('cancelled (Ctrl-C); nothing was written'));
  };
  process.on('SIGINT', onSigint);
  const work = read();
  try {
    return await Promise.race([work, cancelled]);
  } finally {
    process.off('SIGINT', onSigint);
    if (first !== undefined) work.catch(() => {});
  }
}
