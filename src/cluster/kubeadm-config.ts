/**
 * kubeadm's own record of the cluster: the ClusterConfiguration text stored in the ConfigMap
 * kube-system/kubeadm-config. `kubeadm upgrade` regenerates the static pod manifests from it, so a flag
 * that is only in a manifest is lost on the next upgrade.
 *
 *   v1beta3:               apiServer.extraArgs: {cloud-provider: external}            (a map)
 *   v1beta4 (kubeadm 1.31+): apiServer.extraArgs: [{name: cloud-provider, value: external}]  (a list)
 *
 * Text in, text out: the YAML document model keeps comments, key order and the formatting kubeadm
 * writes (lists not indented under their key), so only the extraArgs lines that change differ.
 */
import { isMap, isScalar, isSeq, Pair, parseDocument, Scalar, YAMLMap, YAMLSeq } from 'yaml';
import { normalizeFlagName } from './flags.js';
import { EditError } from './text.js';
import type { Component, FlagChange } from './types.js';

/** The ClusterConfiguration sections that carry component flags. */
export type Section = 'apiServer' | 'controllerManager';

/** The ClusterConfiguration section holding each control-plane component's extraArgs. */
export const SECTION_OF: Readonly<Partial<Record<Component, Section>>> = {
  'kube-apiserver': 'apiServer',
  'kube-controller-manager': 'controllerManager',
};

export type ExtraArgsStyle = 'map' | 'list';

type Document = ReturnType<typeof parseDocument>;

function load(text: string): { doc: Document; style: ExtraArgsStyle } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0)
    throw new EditError(`ClusterConfiguration is not valid YAML: ${doc.errors[0]?.message}`);
  const apiVersion = doc.get('apiVersion');
  const kind = doc.get('kind');
  if (kind !== 'ClusterConfiguration')
    throw new EditError(`expected kind ClusterConfiguration, found ${String(kind)}`);
  if (apiVersion === 'kubeadm.k8s.io/v1beta3') return { doc, style: 'map' };
  if (apiVersion === 'kubeadm.k8s.io/v1beta4') return { doc, style: 'list' };
  throw new EditError(
    `unsupported ClusterConfiguration apiVersion ${String(apiVersion)} (known: kubeadm.k8s.io/v1beta3, v1beta4)`,
  );
}

/** v1beta3 → "map", v1beta4 → "list". */
export function extraArgsStyle(text: string): ExtraArgsStyle {
  return load(text).style;
}

/** `kubernetesVersion` as written ("v1.30.14"), or undefined. */
export function readKubernetesVersion(text: string): string | undefined {
  const v = load(text).doc.get('kubernetesVersion');
  return typeof v === 'string' ? v : undefined;
}

/** A section's extraArgs as [name, value] pairs, in order (a list may repeat a name). */
export function readExtraArgs(text: string, section: Section): Array<[string, string]> {
  const { doc, style } = load(text);
  const node = doc.getIn([section, 'extraArgs'], true);
  if (node === undefined || node === null) return [];
  if (style === 'map') {
    if (!isMap(node)) throw new EditError(`${section}.extraArgs is not a map`);
    return node.items.map((p) => [
      String(isScalar(p.key) ? p.key.value : p.key),
      String(isScalar(p.value) ? p.value.value : p.value),
    ]);
  }
  if (!isSeq(node)) throw new EditError(`${section}.extraArgs is not a list`);
  return node.items.map((item) => {
    if (!isMap(item)) throw new EditError(`${section}.extraArgs has an item that is not {name, value}`);
    return [String(item.get('name')), String(item.get('value') ?? '')];
  });
}

/** Flags as argv (`--name=value`), to reuse the flag rules on extraArgs. */
export function extraArgsAsFlags(pairs: ReadonlyArray<[string, string]>): string[] {
  return pairs.map(([n, v]) => `--${n}=${v}`);
}

function stringScalar(value: string): Scalar<string> {
  // Kubernetes reads every extraArgs value as a string: "true" or "10" must not turn into a bool or a number.
  const s = new Scalar(value);
  if (parseDocument(value).toJS() !== value) s.type = Scalar.QUOTE_DOUBLE;
  return s;
}

/** Inserts key: value where a sorted map would have it (kubeadm writes maps sorted), else at the end. */
function insertSorted(map: YAMLMap, key: string, value: unknown): void {
  const keys = map.items.map((p) => String(isScalar(p.key) ? p.key.value : p.key));
  const sorted = keys.every((k, i) => i === 0 || (keys[i - 1] as string) <= k);
  const pair = new Pair(new Scalar(key), value);
  const at = sorted ? keys.findIndex((k) => k > key) : -1;
  if (at < 0) map.items.push(pair);
  else map.items.splice(at, 0, pair);
}

function sectionMap(doc: Document, section: Section): YAMLMap {
  let node = doc.get(section, true);
  if (node === undefined || node === null || (isScalar(node) && node.value === null)) {
    node = new YAMLMap();
    insertSorted(doc.contents as YAMLMap, section, node);
  }
  if (!isMap(node)) throw new EditError(`ClusterConfiguration ${section} is not a map`);
  // "apiServer: {}" → a block map once it has content.
  node.flow = false;
  return node;
}

function applyMap(doc: Document, section: Section, changes: readonly FlagChange[]): boolean {
  const existing = doc.getIn([section, 'extraArgs'], true);
  let args = isMap(existing) ? existing : undefined;
  if (existing !== undefined && existing !== null && !args)
    throw new EditError(`${section}.extraArgs is not a map`);
  let changed = false;
  for (const change of changes) {
    const name = normalizeFlagName(change.flag);
    const current = args?.items.find(
      (p) => normalizeFlagName(String(isScalar(p.key) ? p.key.value : p.key)) === name,
    );
    const currentValue = current && isScalar(current.value) ? String(current.value.value) : undefined;
    if (change.value === undefined) {
      if (current && args) {
        args.items.splice(args.items.indexOf(current), 1);
        changed = true;
      }
      continue;
    }
    if (current && currentValue === change.value) continue;
    if (current) {
      current.value = stringScalar(change.value);
    } else {
      if (!args) {
        args = new YAMLMap();
        insertSorted(sectionMap(doc, section), 'extraArgs', args);
      }
      args.flow = false;
      insertSorted(args, name, stringScalar(change.value));
    }
    changed = true;
  }
  if (args && args.items.length === 0 && changed) (doc.getIn([section], true) as YAMLMap).delete('extraArgs');
  return changed;
}

function applyList(doc: Document, section: Section, changes: readonly FlagChange[]): boolean {
  const existing = doc.getIn([section, 'extraArgs'], true);
  let args = isSeq(existing) ? existing : undefined;
  if (existing !== undefined && existing !== null && !args)
    throw new EditError(`${section}.extraArgs is not a list`);
  let changed = false;
  const nameOf = (item: unknown) => (isMap(item) ? normalizeFlagName(String(item.get('name'))) : undefined);
  for (const change of changes) {
    const name = normalizeFlagName(change.flag);
    const found = (args?.items ?? []).filter((item) => nameOf(item) === name) as YAMLMap[];
    if (change.value === undefined) {
      for (const item of found) args?.items.splice(args.items.indexOf(item), 1);
      changed ||= found.length > 0;
      continue;
    }
    const [first, ...rest] = found;
    if (first && rest.length === 0 && String(first.get('value') ?? '') === change.value) continue;
    if (first) {
      first.set('value', stringScalar(change.value));
      for (const item of rest) args?.items.splice(args.items.indexOf(item), 1);
    } else {
      if (!args) {
        args = new YAMLSeq();
        insertSorted(sectionMap(doc, section), 'extraArgs', args);
      }
      args.flow = false;
      const entry = new YAMLMap();
      entry.set('name', stringScalar(name));
      entry.set('value', stringScalar(change.value));
      args.items.push(entry);
    }
    changed = true;
  }
  if (args && args.items.length === 0 && changed) (doc.getIn([section], true) as YAMLMap).delete('extraArgs');
  return changed;
}

/**
 * Applies flag changes to the extraArgs of each section. A set adds or replaces the flag (in a v1beta4
 * list: the first entry of that name, dropping later duplicates); a remove deletes it. Returns the text
 * unchanged when every change is already in effect.
 */
export function edit(text: string, changes: Partial<Record<Section, readonly FlagChange[]>>): string {
  const { doc, style } = load(text);
  let changed = false;
  for (const section of ['apiServer', 'controllerManager'] as const) {
    const list = changes[section];
    if (!list || list.length === 0) continue;
    changed = (style === 'map' ? applyMap(doc, section, list) : applyList(doc, section, list)) || changed;
  }
  if (!changed) return text;
  // kubeadm (Go's YAML encoder) does not indent lists under their key and never folds long lines.
  return doc.toString({ indentSeq: false, lineWidth: 0 });
}
