/**
 * A broken endpoint behind the kubeconfig's server (a proxy, a wrong port) that answers without end:
 * the transport stops reading at 64 MiB of an answer (a streamed list's page too, however small its
 * items) and at 16 MiB of one watch line, and fails that request with one clear line, instead of
 * growing the heap until the controller is killed, restarted and killed again.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeResponseTooLargeError } from '../../../src/kube/errors.js';
import { type KubeTransport, MAX_BODY_BYTES, MAX_LINE_BYTES } from '../../../src/kube/transport.js';
import { plainKubeServer } from '../../helpers/plain-kube-server.js';
import { rejection } from '../../helpers/rejection.js';

let transport: KubeTransport;
let close: () => Promise<void>;
let handler: (res: ServerResponse) => void;
/** Bytes each answer had sent when the client hung up. */
const sent: number[] = [];

/** Writes `head`, then `fill` (a byte, or a chunk of its own) in 1 MiB chunks until the client hangs up. */
function endless(head: string, fill: number | Buffer, status = 200) {
  return (res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    const chunk = typeof fill === 'number' ? Buffer.alloc(1024 * 1024, fill) : fill;
    let bytes = 0;
    const pump = () => {
      while (!res.destroyed) {
        bytes += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
    };
    res.on('close', () => sent.push(bytes));
    res.write(head);
    pump();
  };
}

beforeAll(async () => {
  ({ transport, close } = await plainKubeServer((_req, res) => handler(res)));
});
afterAll(() => close());

describe('KubeTransport against an endless answer', () => {
  it('a plain request: fails past 64 MiB, the connection closed', async () => {
    handler = endless('{"kind":"NodeList","items":[', 0x20);
    const err = await rejection(transport.request({ method: 'GET', path: '/api/v1/nodes?limit=1' }));
    expect(err).toBeInstanceOf(KubeResponseTooLargeError);
    expect(err.message).toMatch(
      /^GET \/api\/v1\/nodes: the answer is larger than 64 MiB; ccm stopped reading it \(is http:\/\/127\.0\.0\.1:\d+ a Kubernetes API server\?\)$/,
    );
    await expect.poll(() => sent.length).toBe(1);
    expect(sent[0]).toBeLessThan(MAX_BODY_BYTES + 64 * 1024 * 1024);
  });

  it('an error answer is capped the same', async () => {
    handler = endless('{"kind":"Status","message":"', 0x61, 500);
    const err = await rejection(transport.request({ method: 'GET', path: '/api/v1/nodes' }));
    expect(err.message).toMatch(/the answer is larger than 64 MiB/);
  });

  it('a streamed list: fails when one item grows past 64 MiB, after handing over the items before it', async () => {
    handler = endless('{"kind":"NodeList","metadata":{},"items":[{"a":1},{"b":"', 0x61);
    const items: unknown[] = [];
    const err = await rejection(transport.listPage('/api/v1/nodes?limit=500', (item) => items.push(item)));
    expect(items).toEqual([{ a: 1 }]);
    expect(err).toBeInstanceOf(KubeResponseTooLargeError);
    expect(err.message).toMatch(/^GET \/api\/v1\/nodes: an item of the list is larger than 64 MiB/);
  });

  it('a streamed list of small items without end: fails past 64 MiB of the page', async () => {
    const item = `{"metadata":{"name":"${'n'.repeat(1000)}"}},`;
    handler = endless(
      '{"kind":"NodeList","metadata":{},"items":[',
      Buffer.from(item.repeat(Math.floor((1024 * 1024) / item.length))),
    );
    let items = 0;
    const started = sent.length;
    const err = await rejection(
      transport.listPage('/api/v1/nodes?limit=500', () => {
        items++;
      }),
    );
    expect(err).toBeInstanceOf(KubeResponseTooLargeError);
    expect(err.message).toMatch(/^GET \/api\/v1\/nodes: the list is larger than 64 MiB/);
    expect(items).toBeGreaterThan(60_000);
    await expect.poll(() => sent.length).toBe(started + 1);
    expect(sent.at(-1)).toBeLessThan(MAX_BODY_BYTES + 64 * 1024 * 1024);
  });

  it('a watch: the events before an endless line are delivered, then it fails past 16 MiB', async () => {
    const event = JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } });
    handler = endless(`${event}\n${event}\n{"type":"ADDED","object":{"x":"`, 0x61);
    const lines: string[] = [];
    const started = sent.length;
    const err = await rejection(
      transport.stream('/api/v1/nodes?watch=1', new AbortController().signal, (l) => lines.push(l)),
    );
    expect(lines).toEqual([event, event]);
    expect(err).toBeInstanceOf(KubeResponseTooLargeError);
    expect(err.message).toMatch(/^GET \/api\/v1\/nodes: a line of the watch is larger than 16 MiB/);
    await expect.poll(() => sent.length).toBe(started + 1);
    expect(sent.at(-1)).toBeLessThan(MAX_LINE_BYTES + 64 * 1024 * 1024);
  });

  it('a watch line just under the cap is read whole, across many chunks', async () => {
    const big = 'a'.repeat(MAX_LINE_BYTES - 64);
    handler = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ADDED', object: { big } })}\n`);
    };
    const lines: string[] = [];
    await transport.stream('/api/v1/nodes?watch=1', new AbortController().signal, (l) => lines.push(l));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string).object.big).toHaveLength(big.length);
  });
});
