import { describe, expect, it } from 'vitest';
import { kubeWaitNotices, waitingLine } from '../../../src/cli/kube-flags.js';

/** A stream that keeps what is written, as wide as `columns`. */
function stream(columns?: number) {
  const written: string[] = [];
  const s = { columns, write: (chunk: string) => written.push(chunk) > 0 };
  return { s: s as unknown as NodeJS.WriteStream, written };
}

describe('waitingLine', () => {
  it('is cut to the terminal, so that erasing it leaves no row behind (a wrapped one did)', () => {
    const { s, written } = stream(40);
    const notice = waitingLine(s);
    notice(
      `waiting for the Kubernetes API server at https://127.0.0.1:36855 (GET /api/v1/namespaces/kube-system)`,
    );
    notice(undefined);
    expect(written[0]).toBe('waiting for the Kubernetes API server…');
    expect([...(written[0] ?? '')].length).toBeLessThan(40);
    expect(written[1]).toBe('\r\u001b[K');
  });

  it('shows one line while several answers are overdue, and erases it after the last', () => {
    const { s, written } = stream(120);
    const notice = waitingLine(s);
    notice('waiting for a');
    notice('waiting for b');
    notice(undefined);
    expect(written).toEqual(['waiting for a…']);
    notice(undefined);
    expect(written).toEqual(['waiting for a…', '\r\u001b[K']);
  });
});

describe('kubeWaitNotices', () => {
  it('on a terminal: the erasable line after 1 s', () => {
    const { s, written } = stream(120);
    const notices = kubeWaitNotices(true, s);
    expect(notices.waitingNoticeMs).toBe(1000);
    notices.onWaiting('waiting for x');
    expect(written).toEqual(['waiting for x…']);
  });

  it('anywhere else: one ccm: line after 10 s, not one per overdue request of a pass', () => {
    const { s, written } = stream();
    const notices = kubeWaitNotices(false, s);
    expect(notices.waitingNoticeMs).toBe(10_000);
    notices.onWaiting('waiting for a');
    notices.onWaiting('waiting for b');
    notices.onWaiting(undefined);
    notices.onWaiting(undefined);
    notices.onWaiting('waiting for c');
    expect(written).toEqual(['ccm: waiting for a\n', 'ccm: waiting for c\n']);
  });
});
