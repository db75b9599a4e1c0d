import { parseProviderID } from './provider-id.js';
import type { Instance } from './types.js';

/**
 * Lookups over one cloud listing, so controllers never call the cloud once per Node.
 * Names compare case-insensitively: the kubelet lowercases hostnames, clouds often keep case.
 * A Node named after its instance's id (Brightbox: the hostname is the server id, srv-xxxxx) is that
 * instance, whatever the instance's display name; otherwise the name must match.
 */
export class InstanceIndex {
  private readonly byID = new Map<string, Instance>();
  private readonly byInstanceID = new Map<string, Instance>();
  private readonly byName = new Map<string, Instance[]>();

  constructor(readonly instances: readonly Instance[]) {
    for (const instance of instances) {
      this.byID.set(instance.providerID, instance);
      const id = parseProviderID(instance.providerID)?.id;
      if (id) this.byInstanceID.set(id.toLowerCase(), instance);
      const key = instance.name.toLowerCase();
      this.byName.set(key, [...(this.byName.get(key) ?? []), instance]);
    }
  }

  get size(): number {
    return this.instances.length;
  }

  byProviderID(providerID: string): Instance | undefined {
    return this.byID.get(providerID);
  }

  /** The one instance with this name; undefined when none or several share it (ambiguous). */
  byNodeName(name: string): Instance | undefined {
    const byID = this.byInstanceID.get(name.toLowerCase());
    if (byID) return byID;
    const matches = this.byName.get(name.toLowerCase());
    return matches?.length === 1 ? matches[0] : undefined;
  }

  nameIsAmbiguous(name: string): boolean {
    if (this.byInstanceID.has(name.toLowerCase())) return false;
    return (this.byName.get(name.toLowerCase())?.length ?? 0) > 1;
  }
}
