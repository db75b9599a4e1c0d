/**
 * The `triton.cns.services` tag (triton-cns docs/metadata.md): `service ( "," service )*`, each
 * `label[:port][:key=value…]`. ccm adds `<label>:<port>` entries and records the ones it added (or
 * shares with another Service ccm added them for) in an owner tag per Service, so it removes only
 * its own, never one that a person or another tool put there.
 */
export const SERVICES_TAG = 'triton.cns.services';
export const OWNER_TAG_PREFIX = 'ccm.cns.';

export interface Ownership {
  cluster: string;
  /** namespace/name, for people reading the tags. */
  service: string;
  /** Entries ccm added to the services tag for this Service (absent before it added them). */
  entries: string[];
}

export function ownerTag(serviceUID: string): string {
  return `${OWNER_TAG_PREFIX}${serviceUID}`;
}

export function parseServices(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  return value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
}

export function parseOwnership(value: unknown): Ownership | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<Ownership>;
    if (typeof parsed.cluster !== 'string' || !Array.isArray(parsed.entries)) return undefined;
    return {
      cluster: parsed.cluster,
      service: typeof parsed.service === 'string' ? parsed.service : '',
      entries: parsed.entries.filter((e): e is string => typeof e === 'string'),
    };
  } catch {
    return undefined;
  }
}

export function formatOwnership(o: Ownership): string {
  return JSON.stringify({ cluster: o.cluster, service: o.service, entries: o.entries });
}

/** Entries every other ccm owner tag on the machine claims (another Service, another cluster). */
export function otherClaims(tags: Readonly<Record<string, unknown>>, ownKey: string): Set<string> {
  const claims = new Set<string>();
  for (const [key, value] of Object.entries(tags)) {
    if (!key.startsWith(OWNER_TAG_PREFIX) || key === ownKey) continue;
    for (const e of parseOwnership(value)?.entries ?? []) claims.add(e);
  }
  return claims;
}

export interface TagChange {
  /** The services tag after the change; empty means the tag is removed. */
  services: string[];
  /** The owner tag after the change; undefined means it is removed. */
  ownership?: Ownership;
  /** Entries this change takes out. */
  removed: string[];
  /** Entries that must be there afterwards (this Service's). */
  desired: string[];
  changed: boolean;
}

/**
 * The change for one machine: `desired` entries for this Service (undefined: the machine is no
 * longer its backend, or the Service is gone). Entries of others stay, in their order; an entry
 * ccm claimed is removed only when no other owner claims it too.
 */
export function planTags(
  tags: Readonly<Record<string, unknown>>,
  key: string,
  owner: Omit<Ownership, 'entries'>,
  desired: readonly string[] | undefined,
): TagChange {
  const current = parseServices(tags[SERVICES_TAG]);
  const before = parseOwnership(tags[key]);
  const claimed = before?.entries ?? [];
  const others = otherClaims(tags, key);
  const wanted = new Set(desired ?? []);
  const removed = claimed.filter((e) => !wanted.has(e) && !others.has(e));
  const kept = current.filter((e) => !removed.includes(e));
  const added = [...wanted].filter((e) => !kept.includes(e));
  const services = [...kept, ...added];
  const ownership =
    desired === undefined
      ? undefined
      : {
          ...owner,
          // Also co-claimed: an entry another ccm owner added (it goes when the last claim goes).
          entries: [...wanted].filter((e) => claimed.includes(e) || added.includes(e) || others.has(e)),
        };
  const changed =
    services.join(',') !== current.join(',') ||
    (ownership === undefined
      ? before !== undefined || tags[key] !== undefined
      : tags[key] !== formatOwnership(ownership));
  return { services, ...(ownership ? { ownership } : {}), removed, desired: [...wanted], changed };
}

/** Whether the tags now show the change (CloudAPI applies tag writes asynchronously). */
export function settled(tags: Readonly<Record<string, unknown>>, key: string, change: TagChange): boolean {
  const now = new Set(parseServices(tags[SERVICES_TAG]));
  if (change.removed.some((e) => now.has(e)) || change.desired.some((e) => !now.has(e))) return false;
  if (change.ownership === undefined) return tags[key] === undefined;
  return tags[key] === formatOwnership(change.ownership);
}
