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
  /** One instance, or several when they share the key: an array for each of 5,000 was 20% of the index. */
  private readonly byName = new Map<string, Instance | Instance[]>();
  /** By `scheme://id`, location left out: for provider IDs written with and without a region. */
  private readonly byBareID = new Map<string, Instance | Instance[]>();

  constructor(readonly instances: readonly Instance[]) {
    for (const instance of instances) {
      this.byID.set(instance.providerID, instance);
      const parsed = parseProviderID(instance.providerID);
      if (parsed) {
        const bare = `${parsed.scheme}://${parsed.id}`;
        add(this.byBareID, bare, instance);
        this.byInstanceID.set(parsed.id.toLowerCase(), instance);
      }
      const key = instance.name.toLowerCase();
      add(this.byName, key, instance);
    }
  }

  get size(): number {
    return this.instances.length;
  }

  /**
   * The instance with this provider ID. A provider ID without a location (`openstack:///<id>`) and
   * one with (`openstack://<region>/<id>`) name the same instance, as the official OpenStack
   * controller reads them; two different locations never match.
   */
  byProviderID(providerID: string): Instance | undefined {
    const exact = this.byID.get(providerID);
    if (exact) return exact;
    const parsed = parseProviderID(providerID);
    if (!parsed) return undefined;
    return all(this.byBareID, `${parsed.scheme}://${parsed.id}`).find((instance) => {
      const location = parseProviderID(instance.providerID)?.location ?? '';
      return location === '' || parsed.location === '';
    });
  }

  /**
   * The one instance with this name; undefined when none or several share it (ambiguous). A record
   * of a deleted instance does not count beside a live namesake: it is what recreating an instance
   * under the same name leaves in some clouds' listings for a while.
   */
  byNodeName(name: string): Instance | undefined {
    const byID = this.byInstanceID.get(name.toLowerCase());
    if (byID) return byID;
    const matches = this.namesakes(name);
    return matches.length === 1 ? matches[0] : undefined;
  }

  nameIsAmbiguous(name: string): boolean {
    if (this.byInstanceID.has(name.toLowerCase())) return false;
    return this.namesakes(name).length > 1;
  }

  private namesakes(name: string): Instance[] {
    const namesakes = all(this.byName, name.toLowerCase());
    const live = namesakes.filter((i) => i.state !== 'gone');
    return live.length > 0 ? live : namesakes;
  }
}

function add(map: Map<string, Instance | Instance[]>, key: string, instance: Instance): void {
  const known = map.get(key);
  map.set(
    key,
    known === undefined ? instance : Array.isArray(known) ? [...known, instance] : [known, instance],
  );
}

function all(map: Map<string, Instance | Instance[]>, key: string): Instance[] {
  const found = map.get(key);
  return found === undefined ? [] : Array.isArray(found) ? found : [found];
}
