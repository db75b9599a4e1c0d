/**
 * CMON groups: the `triton.cmon.groups` tag of each Node's machine, which Triton's Container Monitor
 * reads to filter discovery. Upstream behaviour this depends on:
 * - TritonDataCenter/triton-cmon lib/common.js: the tag's value is split on "," (no trimming) into
 *   the machine's groups; lib/endpoints/discover.js: `GET /v1/discover?groups=a,b` validates the
 *   parameter as the tag is validated, splits it on "," and lists the machines having any of them.
 * - triton-tags 1.4.0 (lib/index.js, lib/cmon-groups-tag.pegjs), which sdc-vmapi applies to every tag
 *   write: each group is `[a-zA-Z0-9_-]`, 1 to 100 characters, at most 100 groups, no duplicates,
 *   at least one (an empty value is refused: the tag is deleted instead).
 * So a group name is letters, digits, "_" and "-": anything else cannot round-trip through the
 * comma-separated tag and the `groups` query.
 *
 * Ownership as with CNS (cns.ts): ccm records the groups it added in the tag `ccm.cmon.groups`
 * (`{"cluster":…,"groups":[…]}`), merges with the groups others set and removes only its own.
 */
import { InvalidConfigError } from '../errors.js';
import { parseProviderID } from '../provider-id.js';
import type {
  GroupedNode,
  InstanceGroups,
  InstanceGroupsChange,
  InstanceGroupsNote,
  InstanceGroupsPlan,
  NodeRole,
} from '../types.js';
import type { Machine, Tags, TritonClient } from './client.js';
import {
  CMON_CLUSTER_GROUP,
  CMON_MAX_GROUP_LENGTH,
  type CmonGroupsSpec,
  LONGEST_ROLE_SUFFIX,
  ROLE_SUFFIX,
} from './cmon-spec.js';
import { SCHEME } from './instances.js';
import { type MachineTagOptions, MachineTagWriter } from './machine-tags.js';

export const GROUPS_TAG = 'triton.cmon.groups';
export const GROUPS_OWNER_TAG = 'ccm.cmon.groups';

/** triton-tags 1.4.0 lib/index.js CMON_MAX_GROUPS. */
const MAX_GROUPS = 100;

/** The groups of one Node's machine. Throws InvalidConfigError when the cluster identity is no group name. */
export function groupsFor(spec: CmonGroupsSpec, clusterID: string, roles: readonly NodeRole[]): string[] {
  const base = spec.name ?? clusterID;
  if (!spec.cluster && !spec.role) return [];
  const room = CMON_MAX_GROUP_LENGTH - (spec.role ? LONGEST_ROLE_SUFFIX : 0);
  if (!CMON_CLUSTER_GROUP.test(base) || base.length > room) {
    throw new InvalidConfigError(
      `--cmon-groups: the cluster identity "${clusterID}" (--cluster-name) is no CMON cluster group name (letters, digits and -, at most ${room} characters; _ is for role groups); name the group with cluster=NAME`,
    );
  }
  return [
    ...(spec.cluster ? [base] : []),
    ...(spec.role ? roles.map((r) => `${base}${ROLE_SUFFIX[r]}`) : []),
  ];
}

export function parseGroups(value: unknown): string[] {
  // As triton-cmon lib/common.js reads it: split on ",", nothing trimmed; empty entries name nothing.
  if (typeof value !== 'string') return [];
  return value.split(',').filter((g) => g !== '');
}

export interface GroupsOwnership {
  cluster: string;
  groups: string[];
}

export function parseGroupsOwnership(value: unknown): GroupsOwnership | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<GroupsOwnership>;
    if (typeof parsed.cluster !== 'string' || !Array.isArray(parsed.groups)) return undefined;
    return {
      cluster: parsed.cluster,
      groups: parsed.groups.filter((g): g is string => typeof g === 'string'),
    };
  } catch {
    return undefined;
  }
}

export function formatGroupsOwnership(o: GroupsOwnership): string {
  return JSON.stringify({ cluster: o.cluster, groups: o.groups });
}

export interface GroupsTagChange {
  /** The groups tag afterwards; empty: the tag is deleted. */
  groups: string[];
  /** ccm's record afterwards; undefined: deleted. */
  ownership?: GroupsOwnership;
  added: string[];
  removed: string[];
  changed: boolean;
}

/**
 * One machine's change: `desired` groups of this cluster (undefined or empty: ccm's go). Groups of
 * others stay, in their order; a group that was there before ccm wanted it is not ccm's, and stays
 * when ccm no longer wants it.
 */
export function planGroups(
  tags: Readonly<Tags>,
  cluster: string,
  desired: readonly string[] | undefined,
): GroupsTagChange {
  const current = parseGroups(tags[GROUPS_TAG]);
  const before = parseGroupsOwnership(tags[GROUPS_OWNER_TAG]);
  const claimed = before?.cluster === cluster ? before.groups : [];
  const wanted = [...new Set(desired ?? [])];
  const removed = claimed.filter((g) => !wanted.includes(g) && current.includes(g));
  const kept = current.filter((g) => !removed.includes(g));
  const added = wanted.filter((g) => !kept.includes(g));
  const groups = [...kept, ...added];
  const owned = wanted.filter((g) => claimed.includes(g) || added.includes(g));
  const ownership = owned.length > 0 ? { cluster, groups: owned } : undefined;
  const changed =
    groups.join(',') !== current.join(',') ||
    (ownership
      ? tags[GROUPS_OWNER_TAG] !== formatGroupsOwnership(ownership)
      : tags[GROUPS_OWNER_TAG] !== undefined);
  return { groups, ...(ownership ? { ownership } : {}), added, removed, changed };
}

/** The change in one line, as reports and logs show it. */
export function describeGroupsChange(c: Pick<GroupsTagChange, 'added' | 'removed'>): string {
  const parts = [
    ...(c.added.length > 0 ? [`add ${c.added.join(', ')}`] : []),
    ...(c.removed.length > 0 ? [`remove ${c.removed.join(', ')}`] : []),
  ];
  return `tag ${GROUPS_TAG}: ${parts.length > 0 ? parts.join('; ') : `record ccm's groups in ${GROUPS_OWNER_TAG}`}`;
}

function settledGroups(tags: Readonly<Tags>, change: GroupsTagChange): boolean {
  const now = parseGroups(tags[GROUPS_TAG]);
  if (change.removed.some((g) => now.includes(g)) || change.ownership?.groups.some((g) => !now.includes(g)))
    return false;
  return change.ownership
    ? tags[GROUPS_OWNER_TAG] === formatGroupsOwnership(change.ownership)
    : tags[GROUPS_OWNER_TAG] === undefined;
}

/**
 * The instance groups of the Triton provider. Listing: one ListMachines with `tombstone` (failed
 * machines too, whose tags CloudAPI still writes; destroyed ones need nothing). A change: the
 * machine's tags read, merged, written with AddMachineTags / DeleteMachineTag, read back until
 * CloudAPI shows it (it applies tag writes asynchronously), through the provider's one tag writer
 * (machine-tags.ts), which the CNS changes share.
 */
export class CmonGroups implements InstanceGroups {
  private readonly tags: MachineTagWriter;

  constructor(
    private readonly client: TritonClient,
    readonly spec: CmonGroupsSpec,
    options: MachineTagOptions = {},
    tags?: MachineTagWriter,
  ) {
    this.tags = tags ?? new MachineTagWriter(client, options);
  }

  checkCluster(clusterID: string): void {
    groupsFor(this.spec, clusterID, ['control-plane', 'worker']);
  }

  async plan(
    clusterID: string,
    nodes: readonly GroupedNode[],
    signal?: AbortSignal,
  ): Promise<InstanceGroupsPlan> {
    // The groups are checked before anything is listed: a cluster identity that is no group is a
    // configuration error, the same for every Node.
    const desiredOf = new Map<string, { node: string; groups: string[] }>();
    for (const node of nodes) {
      const parsed = parseProviderID(node.providerID);
      if (parsed?.scheme !== SCHEME) continue;
      desiredOf.set(parsed.id, { node: node.name, groups: groupsFor(this.spec, clusterID, node.roles) });
    }
    groupsFor(this.spec, clusterID, ['control-plane', 'worker']);
    const machines = (await this.client.listMachines(signal, { tombstone: true })).filter(
      (m) => m.state !== 'deleted',
    );
    const changes: InstanceGroupsChange[] = [];
    for (const machine of machines) {
      const tags = machine.tags ?? {};
      const desired = desiredOf.get(machine.id);
      const record = parseGroupsOwnership(tags[GROUPS_OWNER_TAG]);
      if (!desired && record?.cluster !== clusterID) continue;
      const providerID = `${SCHEME}://${machine.id}`;
      const node = desired ? { node: desired.node } : {};
      if (desired && record && record.cluster !== clusterID) {
        changes.push({
          providerID,
          ...node,
          groups: desired.groups,
          change: `tag ${GROUPS_TAG}: none`,
          refused: otherCluster(machine, record, clusterID),
        });
        continue;
      }
      const change = planGroups(tags, clusterID, desired?.groups);
      if (!change.changed) continue;
      const refused = tooMany(change.groups);
      changes.push({
        providerID,
        ...node,
        groups: desired?.groups ?? [],
        change: describeGroupsChange(change),
        ...(refused ? { refused } : {}),
      });
    }
    return { changes, notes: nodeLabelProblems(nodes, machines) };
  }

  apply(cluster: string, planned: InstanceGroupsChange, signal?: AbortSignal): Promise<void> {
    const id = parseProviderID(planned.providerID)?.id ?? '';
    if (planned.refused) return Promise.reject(new InvalidConfigError(planned.refused));
    const desired = planned.node === undefined ? undefined : planned.groups;
    return this.tags.change(
      id,
      `${GROUPS_TAG} tag`,
      (tags) => {
        const record = parseGroupsOwnership(tags[GROUPS_OWNER_TAG]);
        if (record && record.cluster !== cluster) {
          if (desired === undefined) return undefined;
          throw new InvalidConfigError(otherCluster({ id }, record, cluster));
        }
        const change = planGroups(tags, cluster, desired);
        if (!change.changed) return undefined;
        const refused = tooMany(change.groups);
        if (refused) throw new InvalidConfigError(refused);
        const groups: Tags = change.groups.length > 0 ? { [GROUPS_TAG]: change.groups.join(',') } : {};
        const settled = (after: Tags) => settledGroups(after, change);
        // One write: the groups and ccm's record of them together.
        if (change.ownership) {
          return { add: { ...groups, [GROUPS_OWNER_TAG]: formatGroupsOwnership(change.ownership) }, settled };
        }
        // The groups first, the record last: a failure in between leaves a record ccm cleans up from.
        const dropGroups = change.groups.length === 0 && tags[GROUPS_TAG] !== undefined;
        return { add: groups, remove: [...(dropGroups ? [GROUPS_TAG] : []), GROUPS_OWNER_TAG], settled };
      },
      signal,
    );
  }
}

/**
 * The Nodes whose CMON series Prometheus will not label with their own name. The job of `ccm
 * manifests --cmon` makes `node` of what CMON lists of a machine (src/cli/manifests-cmon.ts): its name
 * (alias) lowercased, else its UUID. A Node registered under another name (--hostname-override, a
 * fully qualified name, a machine renamed since) gets that label, not its own; and two machines whose
 * names differ only in case (CloudAPI does not keep names unique: sdc-cloudapi lib/machines.js checks
 * none) give their series the same label, which nothing in the job can tell apart.
 */
export function nodeLabelProblems(
  nodes: readonly { name: string; providerID: string }[],
  machines: readonly { id: string; name?: string }[],
): InstanceGroupsNote[] {
  const byId = new Map(machines.map((m) => [m.id.toLowerCase(), m]));
  const label = (m: { id: string; name?: string }) => (m.name ? m.name.toLowerCase() : m.id.toLowerCase());
  const managed = nodes.flatMap((node) => {
    const parsed = parseProviderID(node.providerID);
    const machine = parsed?.scheme === SCHEME ? byId.get(parsed.id.toLowerCase()) : undefined;
    return machine ? [{ node, machine }] : [];
  });
  const byLabel = new Map<string, typeof managed>();
  for (const m of managed) byLabel.set(label(m.machine), [...(byLabel.get(label(m.machine)) ?? []), m]);
  const notes: InstanceGroupsNote[] = [];
  for (const { node, machine } of managed) {
    const shown = label(machine);
    const others = (byLabel.get(shown) ?? []).filter((o) => o.machine.id !== machine.id);
    let note: string | undefined;
    if (others.length > 0) {
      const names = others.map((o) => `machine ${o.machine.id} ("${o.machine.name}", Node ${o.node.name})`);
      note = `its machine's name "${machine.name}" is also ${names.join(' and ')}'s, case aside: Prometheus' CMON job labels the series of both node="${shown}" (give the machines names that differ beyond case)`;
    } else if (shown !== node.name) {
      const what = machine.name ? `is named "${machine.name}"` : 'has no name';
      note = `its machine ${machine.id} ${what}: Prometheus' CMON job labels its series node="${shown}", not the Node's name (the job takes the machine's name, lowercased, else its UUID; rename the machine to the Node's name)`;
    }
    if (note) notes.push({ node: node.name, providerID: node.providerID, note });
  }
  return notes;
}

function otherCluster(machine: Pick<Machine, 'id'>, record: GroupsOwnership, cluster: string): string {
  return `machine ${machine.id} carries ${GROUPS_OWNER_TAG} of cluster "${record.cluster}", not this cluster ("${cluster}"); ccm leaves its CMON groups alone (remove the tag, or give the same --cluster-name as that cluster's ccm)`;
}

/** triton-tags refuses more than 100 groups: said before CloudAPI refuses the write. */
function tooMany(groups: readonly string[]): string | undefined {
  return groups.length > MAX_GROUPS
    ? `${GROUPS_TAG} would hold ${groups.length} groups, more than the ${MAX_GROUPS} Triton allows (triton-tags); ccm adds none`
    : undefined;
}
