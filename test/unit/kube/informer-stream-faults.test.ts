/**
 * The informer's streamed relist against a fake API server that answers badly: a page cut
 * off mid-item, a non-JSON page, a page ending cleanly but short, a page whose metadata follows its
 * items. A relist that fails half-way must change nothing; handlers see the difference once.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createInformer } from '../../../src/kube/informer.js';
import type { KubeTransport } from '../../../src/kube/transport.js';
import { plainKubeServer } from '../../helpers/plain-kube-server.js';

let transport: KubeTransport;
let close: () => Promise<void>;
let onList: (url: URL, res: ServerResponse) => void;
let onWatch: (url: URL, res: ServerResponse) => void;
const open = new Set<ServerResponse>();

beforeAll(async () => {
  ({ transport, close } = await plainKubeServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    open.add(res);
    res.on('close', () => open.delete(res));
    if (url.searchParams.get('watch')) onWatch(url, res);
    else onList(url, res);
  }));
});
afterAll(() => close());

const node = (name: string, rv: string) => ({ metadata: { name, resourceVersion: rv }, spec: {} });
const page = (items: unknown[], cont: string, rv = '100', metadataLast = false) => {
  const meta = JSON.stringify({ resourceVersion: rv, ...(cont ? { continue: cont } : {}) });
  const its = JSON.stringify(items);
  return metadataLast
    ? `{"kind":"NodeList","apiVersion":"v1","items":${its},"metadata":${meta}}`
    : `{"kind":"NodeList","apiVersion":"v1","metadata":${meta},"items":${its}}`;
};

type Fault = 'cut-mid-item' | 'html' | 'json-not-a-list' | 'clean-short' | 'none';

it.each<Fault>(['cut-mid-item', 'html', 'json-not-a-list', 'clean-short'])(
  'a relist whose second page is broken (%s) changes nothing; the next good one is told once',
  async (fault) => {
    let generation = 0; // 0: a,b,c  1: a, c', d
    let failures = 0;
    let watches = 0;
    onList = (url, res) => {
      const cont = url.searchParams.get('continue');
      const items =
        generation === 0
          ? [node('a', '1'), node('b', '2'), node('c', '3')]
          : [node('a', '1'), node('c', '30'), node('d', '4')];
      if (!cont) {
        res.writeHead(200, { 'content-type': 'application/json' });
        // metadata after items on the first page: its continue must still be read
        return res.end(page(items.slice(0, 2), 'p2', '100', true));
      }
      if (generation === 1 && failures < 2) {
        failures++;
        const body = page(items.slice(2), '');
        if (fault === 'cut-mid-item') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write(body.slice(0, body.indexOf('"name"') + 4));
          setTimeout(() => res.destroy(), 20);
        } else if (fault === 'html') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('<html><body>proxy error</body></html>');
        } else if (fault === 'json-not-a-list') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"kind":"Status","status":"Failure","message":"nope"}');
        } else {
          // complete HTTP message (content-length), JSON cut between items and metadata
          const short = body.slice(0, body.lastIndexOf(']') + 1);
          res.writeHead(200, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(short),
          });
          res.end(short);
        }
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(page(items.slice(2), ''));
    };
    onWatch = (_url, res) => {
      watches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      if (watches === 1) {
        // the server compacted what the informer saw: 410, then the next list sees generation 1
        generation = 1;
        res.end(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old' } })}\n`,
        );
      }
      // later watches stay open
    };
    const seen: string[] = [];
    const inf = createInformer({
      transport,
      path: '/api/v1/nodes',
      resource: 'nodes',
      slim: (raw) => raw as { metadata: { name: string; resourceVersion: string } },
      pageSize: 2,
      sleep: async () => {},
    });
    inf.on('add', (n) => seen.push(`add ${n.metadata.name}`));
    inf.on('update', (_o, n) => seen.push(`update ${n.metadata.name}`));
    inf.on('delete', (n) => seen.push(`delete ${n.metadata.name}`));
    inf.start();
    await expect.poll(() => watches, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await inf.stop();
    for (const res of open) res.destroy();
    expect(failures).toBe(2);
    // Each failed relist left everything as it was: only the initial adds, then one difference.
    expect(seen).toEqual(['add a', 'add b', 'add c', 'update c', 'add d', 'delete b']);
    expect(
      inf
        .list()
        .map((n) => n.metadata.name)
        .sort(),
    ).toEqual(['a', 'c', 'd']);
  },
);

it('a list whose items are null (an empty list as Go may write it) is an empty listing, not a failure', async () => {
  let lists = 0;
  onList = (_url, res) => {
    lists++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":null}');
  };
  let watchedFrom = '';
  onWatch = (url, res) => {
    watchedFrom = url.searchParams.get('resourceVersion') ?? '';
    res.writeHead(200, { 'content-type': 'application/json' });
  };
  const restarts: string[] = [];
  const inf = createInformer({
    transport,
    path: '/api/v1/nodes',
    resource: 'nodes',
    slim: (raw) => raw,
    onRestart: (r) => restarts.push(r),
    sleep: async () => {},
  });
  inf.start();
  await expect.poll(() => watchedFrom, { timeout: 10_000 }).toBe('5');
  await inf.stop();
  for (const res of open) res.destroy();
  expect(inf.hasSynced()).toBe(true);
  expect(inf.size).toBe(0);
  expect(lists).toBe(1);
  expect(restarts).toEqual([]);
});
