/**
 * One shared copy of the short strings that repeat across every Node and instance ccm keeps: label
 * values (`amd64`, an instance type, a region), taint keys and effects, address and condition types.
 * JSON.parse makes a new string for each value it reads, so 5,000 Nodes held 5,000 copies of each
 * (docs/performance.md, "What a Node costs"). Bounded: once MAX_ENTRIES distinct strings are in,
 * the table starts afresh, so unique values (a per-Node id label) cost no more than before and a value
 * that becomes common later (a new pool's instance type) is still shared; strings shared so far stay
 * shared by what holds them.
 */
const MAX_ENTRIES = 4096;
const MAX_LENGTH = 64;
let table = new Map<string, string>();

export function intern(value: string): string {
  if (value.length > MAX_LENGTH) return value;
  const known = table.get(value);
  if (known !== undefined) return known;
  if (table.size >= MAX_ENTRIES) table = new Map();
  table.set(value, value);
  return value;
}

/** How many strings the table holds (its bound is what the tests check). */
export function internedCount(): number {
  return table.size;
}
