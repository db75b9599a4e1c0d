/**
 * One shared copy of the short strings that repeat across every Node and instance ccm keeps: label
 * values (`amd64`, an instance type, a region), taint keys and effects, address and condition types.
 * JSON.parse makes a new string for each value it reads, so 5,000 Nodes held 5,000 copies of each
 * (docs/performance.md, "What a Node costs"). Bounded: past MAX_ENTRIES distinct strings, new ones
 * are returned as they are, so a cluster with unique values costs no more than before.
 */
const MAX_ENTRIES = 4096;
const MAX_LENGTH = 64;
const table = new Map<string, string>();

export function intern(value: string): string {
  if (value.length > MAX_LENGTH) return value;
  const known = table.get(value);
  if (known !== undefined) return known;
  if (table.size < MAX_ENTRIES) table.set(value, value);
  return value;
}

/** How many strings the table holds (its bound is what the tests check). */
export function internedCount(): number {
  return table.size;
}
