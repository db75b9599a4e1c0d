import type { Instance } from './types.js';

/**
 * Lookups over one cloud listing, so controllers never call the cloud once per Node.
 * Names compare case-insensitively: the kubelet lowercases hostnames, clouds often keep case.
 */
export class InstanceIndex {
  private readonly byID = new Map<string, Instance>();
  private readonly byName = new Map<string, Instance[]>();

  constructor(readonly instances: readonly Instance[]) {
    for (const instance of instances) {
      this.byID.set(instance.providerID, instance);
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
    const matches = this.byName.get(name.toLowerCase());
    return matches?.length === 1 ? matches[0] : undefined;
  }

  nameIsAmbiguous(name: string): boolean {
    return (this.byName.get(name.toLowerCase())?.length ?? 0) > 1;
  }
}
