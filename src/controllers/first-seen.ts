import { monotonicMs } from '../clock.js';
import { nodeName, type SlimNode } from '../kube/slim-node.js';

/**
 * When this process first saw each tainted Node (monotonicMs() time), with the Node's UID: a Node
 * deleted and recreated under its name while the watch was away arrives as an update, not an add.
 */
export class FirstSeen {
  private readonly seen = new Map<string, { uid: string | undefined; at: number }>();

  /** When `node` was first seen; now, if this is the first time. */
  at(node: SlimNode): number {
    const name = nodeName(node);
    const uid = node.metadata?.uid;
    const known = this.seen.get(name);
    if (known && known.uid === uid) return known.at;
    const at = monotonicMs();
    this.seen.set(name, { uid, at });
    return at;
  }

  forget(node: SlimNode): void {
    this.seen.delete(nodeName(node));
  }
}
