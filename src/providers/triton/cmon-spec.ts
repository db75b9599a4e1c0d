/**
 * The value of `--cmon-groups` (env TRITON_CMON_GROUPS, Secret key cmon-groups): which CMON groups ccm
 * keeps on each managed Node's machine. Without imports: the flag's parse step (src/cli/flag-values.ts)
 * reads it at every start.
 *
 *   cluster        the cluster's group: the cluster identity (--cluster-name, else k8s-<kube-system UID>)
 *   cluster=NAME   the cluster's group, named NAME
 *   role           one group per Node role: <cluster group>_control-plane, <cluster group>_worker
 *   none           no group: ccm takes off the groups it added
 *
 * A group name is letters, digits, "_" and "-", 1 to 100 characters: what triton-tags 1.4.0 accepts in
 * `triton.cmon.groups` (lib/cmon-groups-tag.pegjs, lib/index.js), and so what survives triton-cmon's
 * split on "," of the tag (lib/common.js) and of the discover `groups` query (lib/endpoints/discover.js).
 *
 * Cluster groups and role groups never meet (review 46): a role group joins its cluster group and the
 * role with "_", and a cluster group has no "_" (CMON_CLUSTER_GROUP). Were the separator "-", cluster
 * prod's role group prod-worker would be cluster prod-worker's group, and that cluster's job would
 * scrape prod's workers. "_" is the one character triton-tags allows beside letters, digits and "-",
 * and ccm's default cluster identity (k8s-<hex>) has none.
 */
export interface CmonGroupsSpec {
  cluster: boolean;
  role: boolean;
  /** The cluster group's name; default: the cluster identity. */
  name?: string;
}

export type CmonRole = 'control-plane' | 'worker';

export const CMON_GROUP = /^[A-Za-z0-9_-]{1,100}$/;
/** A cluster group: a CMON group without "_", which only role groups carry. */
export const CMON_CLUSTER_GROUP = /^[A-Za-z0-9-]{1,100}$/;
/** A role group: a cluster group, "_" and the role. */
export const CMON_ROLE_GROUP = /^[A-Za-z0-9-]{1,86}_(control-plane|worker)$/;
export const CMON_MAX_GROUP_LENGTH = 100;
export const ROLE_SUFFIX: Record<CmonRole, string> = { 'control-plane': '_control-plane', worker: '_worker' };
/** The longest role suffix: a cluster group with role groups leaves room for it. */
export const LONGEST_ROLE_SUFFIX = ROLE_SUFFIX['control-plane'].length;

export const CMON_GROUPS_EXPECTED =
  'cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none';

/** Parses the value; a bad one throws an Error whose message is the flag style's `expected …, got "…"`. */
export function parseCmonGroups(text: string): CmonGroupsSpec {
  const bad = (expected = CMON_GROUPS_EXPECTED) =>
    new Error(`expected ${expected}, got ${JSON.stringify(text)}`);
  const items = text.split(',').map((i) => i.trim());
  const spec: CmonGroupsSpec = { cluster: false, role: false };
  if (items.length === 1 && items[0] === 'none') return spec;
  const seen = new Set<string>();
  for (const item of items) {
    const eq = item.indexOf('=');
    const word = eq < 0 ? item : item.slice(0, eq);
    const name = eq < 0 ? undefined : item.slice(eq + 1);
    if (seen.has(word)) throw bad();
    seen.add(word);
    if (word === 'role' && name === undefined) spec.role = true;
    else if (word === 'cluster') {
      spec.cluster = true;
      if (name !== undefined) {
        if (!CMON_CLUSTER_GROUP.test(name)) {
          throw bad(
            'cluster=NAME, NAME a CMON group of letters, digits and - (1 to 100 characters; _ is for role groups)',
          );
        }
        spec.name = name;
      }
    } else throw bad();
  }
  if (
    spec.name !== undefined &&
    spec.role &&
    spec.name.length + LONGEST_ROLE_SUFFIX > CMON_MAX_GROUP_LENGTH
  ) {
    throw bad(
      `cluster=NAME of at most ${CMON_MAX_GROUP_LENGTH - LONGEST_ROLE_SUFFIX} characters with role (NAME_control-plane is a group too)`,
    );
  }
  return spec;
}
