import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { FirstSeen } from '../../../src/controllers/first-seen.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';

const node = (name: string, uid: string): SlimNode => ({ metadata: { name, uid } });

describe('FirstSeen', () => {
  it('keeps the first time a Node was seen while it is the same Node', async () => {
    const seen = new FirstSeen();
    const first = seen.at(node('w1', 'a'));
    await sleep(5);
    expect(seen.at(node('w1', 'a'))).toBe(first);
  });

  it('starts again for a Node recreated under the same name (another UID), as an update would show it', async () => {
    const seen = new FirstSeen();
    const first = seen.at(node('w1', 'a'));
    await sleep(5);
    expect(seen.at(node('w1', 'b'))).toBeGreaterThan(first);
  });

  it('starts again once forgotten (deleted, or initialised and tainted again)', async () => {
    const seen = new FirstSeen();
    const first = seen.at(node('w1', 'a'));
    seen.forget(node('w1', 'a'));
    await sleep(5);
    expect(seen.at(node('w1', 'a'))).toBeGreaterThan(first);
  });
});
