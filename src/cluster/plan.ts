/**
 * What `ccm cluster prepare` changes, as a pure function of what detection found and the files'
 * bytes: no I/O, so every plan can be previewed, diffed and tested.
 *
 * The rules (see ../../shared/reference/ccm-behaviour.md, "Cluster flags"):
 * - kubelet: --cloud-provider=external, --provider-id when given; any in-tree --cloud-config goes.
 * - kube-controller-manager: --cloud-provider=external; any in-tree --cloud-config goes.
 * - kube-apiserver: --cloud-provider=external only below 1.33 (deprecated in 1.29, removed in 1.33: a newer
 *   server refuses to start with it, so there it is not added and any leftover --cloud-provider or
 *   --cloud-config is removed). An apiserver of unknown version is left alone rather than guessed.
 * - the provider's recommended flags (data passed in) are set on each component.
 */
import * as envFile from './env-file.js';
import { effectiveChanges, hasFlag, normalizeFlagName } from './flags.js';
import * as kubeadmConfig from './kubeadm-config.js';
import * as staticPod from './static-pod.js';
import * as systemdUnit from './systemd-unit.js';
import type { Component, ComponentFile, Detection, FileEdit, FlagChange, Skip, Version } from './types.js';
import { apiserverHasCloudProviderFlag, formatVersion, parseVersion } from './versions.js';

export interface PlanOptions {
  /** The kubelet's --provider-id (for one node), in the provider's format. */
  providerID?: string;
  /** The provider's recommended flags per component, e.g. {'kube-apiserver': {'kubelet-preferred-address-types': '…'}}. */
  extra?: Partial<Record<Component, Record<string, string>>>;
}

export interface Plan {
  edits: FileEdit[];
  skips: Skip[];
}

export const UNKNOWN_APISERVER_VERSION = 'version unknown; pass --apiserver-version';

const IN_TREE_CONFIG = 'in-tree cloud provider configuration, unused with an external cloud controller';

/** The flag changes a component needs, and why a part of the job is skipped (if it is). */
export function desiredChanges(
  component: Component,
  version: Version | undefined,
  options: PlanOptions = {},
): { changes: FlagChange[]; skip?: Skip } {
  const changes: FlagChange[] = [];
  let skip: Skip | undefined;
  if (component === 'kube-apiserver' && !version) {
    return { changes, skip: { component, reason: UNKNOWN_APISERVER_VERSION } };
  }
  switch (component) {
    case 'kubelet':
      changes.push({
        flag: 'cloud-provider',
        value: 'external',
        reason: 'the node waits for the cloud controller to initialise it',
      });
      if (options.providerID) {
        changes.push({
          flag: 'provider-id',
          value: options.providerID,
          reason: "the node's instance at the provider",
        });
      }
      break;
    case 'kube-controller-manager':
      changes.push({
        flag: 'cloud-provider',
        value: 'external',
        reason: 'the cloud loops run in the external cloud controller',
      });
      break;
    case 'kube-apiserver': {
      const v = formatVersion(version as Version);
      if (apiserverHasCloudProviderFlag(version as Version)) {
        changes.push({
          flag: 'cloud-provider',
          value: 'external',
          reason: `kube-apiserver ${v} still has --cloud-provider (deprecated in 1.29, removed in 1.33)`,
        });
      } else {
        skip = {
          component,
          reason: `--cloud-provider not added: kube-apiserver ${v} no longer has it (removed in 1.33; the server would refuse to start)`,
        };
      }
      break;
    }
  }
  for (const [flag, value] of Object.entries(options.extra?.[component] ?? {})) {
    const name = normalizeFlagName(flag);
    if (changes.some((c) => c.flag === name)) continue;
    changes.push({ flag: name, value, reason: "the provider's recommended setting" });
  }
  if (component === 'kube-apiserver' && !apiserverHasCloudProviderFlag(version as Version)) {
    const v = formatVersion(version as Version);
    const gone = `kube-apiserver ${v} has no such flag (removed in 1.33): it would refuse to start`;
    for (const flag of ['cloud-provider', 'cloud-config']) {
      const at = changes.findIndex((c) => c.flag === flag);
      if (at >= 0) changes.splice(at, 1);
      changes.push({ flag, reason: gone });
    }
  } else if (!changes.some((c) => c.flag === 'cloud-config')) {
    changes.push({ flag: 'cloud-config', reason: IN_TREE_CONFIG });
  }
  return skip ? { changes, skip } : { changes };
}

/** The flags a file carries for its component (the static pod's and unit's program included first). */
export function readFlags(file: ComponentFile, bytes: Buffer | undefined): string[] {
  if (!bytes) return [];
  switch (file.kind) {
    case 'static-pod':
      return staticPod.readArgs(bytes, file.component);
    case 'env-file':
      return envFile.readArgs(bytes, file.variable ?? 'KUBELET_EXTRA_ARGS');
    case 'systemd-unit':
      return systemdUnit.readArgs(bytes);
  }
}

/** The file's bytes after the changes, by its kind. A missing env file (undefined) is created. */
export function editFile(
  file: ComponentFile,
  bytes: Buffer | undefined,
  changes: readonly FlagChange[],
): Buffer {
  if (file.kind === 'env-file') return envFile.edit(bytes, file.variable ?? 'KUBELET_EXTRA_ARGS', changes);
  if (!bytes) throw new Error(`${file.path} does not exist`);
  if (file.kind === 'static-pod') return staticPod.edit(bytes, changes, file.component);
  return systemdUnit.edit(bytes, changes);
}

/**
 * The edits that switch the detected components to the external cloud provider, and what is skipped.
 * `contents` holds each detected file's bytes (undefined: the file does not exist).
 *
 * For a component with several files (the kubelet's kubeadm-flags.env and its KUBELET_EXTRA_ARGS file),
 * the first one in `detection.files` gets the new flags; the later ones, which the kubelet reads after it
 * (their values win), only get corrections of flags they already carry and removals.
 * Only changes not yet in effect become edits: a second run over the result plans nothing, and each
 * component that needs nothing gets a skip saying so.
 */
export function planPrepare(
  detection: Detection,
  contents: ReadonlyMap<string, Buffer | undefined>,
  options: PlanOptions = {},
): Plan {
  const edits: FileEdit[] = [];
  const skips: Skip[] = [];
  const components = [...new Set(detection.files.map((f) => f.component))];
  for (const component of components) {
    const { changes, skip } = desiredChanges(component, detection.versions[component], options);
    if (skip) skips.push(skip);
    if (changes.length === 0) continue;
    const files = detection.files.filter((f) => f.component === component);
    let edited = false;
    files.forEach((file, index) => {
      const before = contents.get(file.path);
      if (before === undefined && (index > 0 || file.kind !== 'env-file')) {
        if (file.kind !== 'env-file') skips.push({ component, reason: `${file.path} could not be read` });
        return;
      }
      const args = readFlags(file, before);
      const applicable =
        index === 0 ? changes : changes.filter((c) => c.value === undefined || hasFlag(args, c.flag));
      const effective = effectiveChanges(args, applicable);
      if (effective.length === 0) return;
      const after = editFile(file, before, effective);
      if (before?.equals(after)) return;
      edits.push({ file, before: before ?? Buffer.alloc(0), after, changes: effective });
      edited = true;
    });
    if (!edited && !skip) {
      const set = changes.filter((c) => c.value !== undefined).map((c) => `--${c.flag}=${c.value}`);
      skips.push({ component, reason: `already prepared (${set.join(' ') || 'no flags to change'})` });
    }
  }
  return { edits, skips };
}

export const KUBEADM_CONFIG_APISERVER =
  'kubeadm-config does not record --cloud-provider for kube-apiserver: a later `kubeadm upgrade` to 1.33+ would write a manifest that apiserver refuses';

export interface ClusterConfigurationPlan {
  /** The new ClusterConfiguration text; identical to the input when nothing changes. */
  after: string;
  /** The changes made, with the component each one is for. */
  changes: Array<FlagChange & { component: Component }>;
  skips: Skip[];
}

const SECTIONS: Array<[kubeadmConfig.Section, Component]> = [
  ['apiServer', 'kube-apiserver'],
  ['controllerManager', 'kube-controller-manager'],
];

/**
 * The same rules applied to kubeadm's record (ConfigMap kube-system/kubeadm-config, key
 * ClusterConfiguration), so a later `kubeadm upgrade` regenerates the manifests with the flags. The
 * apiserver's version is the detected one, else the record's own kubernetesVersion.
 */
export function planClusterConfiguration(
  text: string,
  detection: Pick<Detection, 'versions'>,
  options: Pick<PlanOptions, 'extra'> = {},
): ClusterConfigurationPlan {
  const recorded = kubeadmConfig.readKubernetesVersion(text);
  const versions: Partial<Record<Component, Version>> = { ...detection.versions };
  versions['kube-apiserver'] ??= recorded ? parseVersion(recorded) : undefined;
  const skips: Skip[] = [];
  const changes: ClusterConfigurationPlan['changes'] = [];
  const perSection: Partial<Record<kubeadmConfig.Section, FlagChange[]>> = {};
  for (const [section, component] of SECTIONS) {
    const desired = desiredChanges(component, versions[component], { extra: options.extra });
    if (desired.skip) skips.push(desired.skip);
    let wanted = desired.changes;
    if (
      component === 'kube-apiserver' &&
      wanted.some((c) => c.flag === 'cloud-provider' && c.value !== undefined)
    ) {
      // Recorded here, the flag would survive a `kubeadm upgrade` to 1.33+, whose apiserver refuses it
      // and would not start; without it an apiserver before 1.33 behaves the same (in-tree clouds are gone).
      wanted = wanted.map((c) =>
        c.flag === 'cloud-provider' ? { flag: c.flag, reason: KUBEADM_CONFIG_APISERVER } : c,
      );
      skips.push({ component, reason: KUBEADM_CONFIG_APISERVER });
    }
    const current = kubeadmConfig.extraArgsAsFlags(kubeadmConfig.readExtraArgs(text, section));
    const effective = effectiveChanges(current, wanted);
    perSection[section] = effective;
    changes.push(...effective.map((c) => ({ ...c, component })));
  }
  const after = changes.length > 0 ? kubeadmConfig.edit(text, perSection) : text;
  return { after, changes, skips };
}
