/**
 * Static pod manifests (/etc/kubernetes/manifests/kube-*.yaml) whose flags are the items of the
 * container's `command` (and `args`, when present) block list:
 *
 *     - command:
 *       - kube-apiserver
 *       - --advertise-address=10.0.0.10
 *
 * The YAML parser only finds where each item is; the edit itself is on lines: a changed value is
 * rewritten in its own quoting style, a removed flag takes its line with it, a new flag gets a line
 * after the last item that copies its indentation, dash and quoting. Everything else stays byte for byte.
 */
import { isMap, isScalar, isSeq, parseDocument, type Scalar, stringify, type YAMLSeq } from 'yaml';
import { planArgEdits } from './flags.js';
import { decode, EditError, eolOf, splice } from './text.js';
import type { FlagChange } from './types.js';

interface Item {
  value: string;
  node: Scalar;
  list: YAMLSeq;
}

interface Container {
  image: string | undefined;
  items: Item[];
  /** The list new flags are appended to: `args` when present, else `command`. */
  appendTo: YAMLSeq | undefined;
}

function findContainer(text: string, container?: string): Container {
  const doc = parseDocument(text, { keepSourceTokens: true });
  if (doc.errors.length > 0) throw new EditError(`the manifest is not valid YAML: ${doc.errors[0]?.message}`);
  const containers = doc.getIn(['spec', 'containers'], true);
  if (!isSeq(containers) || containers.items.length === 0) {
    throw new EditError('the manifest has no spec.containers; is it a static pod manifest?');
  }
  const maps = containers.items.filter(isMap);
  const chosen =
    (container ? maps.find((m) => m.get('name') === container) : undefined) ??
    (maps[0] as (typeof maps)[number]);
  const items: Item[] = [];
  let appendTo: YAMLSeq | undefined;
  for (const key of ['command', 'args']) {
    const list = chosen.get(key, true);
    if (list === undefined) continue;
    if (!isSeq(list)) throw new EditError(`the container's ${key} is not a list`);
    if (list.flow)
      throw new EditError(`the container's ${key} is a [flow] list; write it one item per line first`);
    for (const node of list.items) {
      if (!isScalar(node) || typeof node.value !== 'string') {
        throw new EditError(`the container's ${key} has an item that is not a string`);
      }
      if (node.type === 'BLOCK_FOLDED' || node.type === 'BLOCK_LITERAL') {
        throw new EditError(`the container's ${key} has a multi-line item; write it on one line first`);
      }
      items.push({ value: node.value, node, list });
    }
    appendTo = list;
  }
  const image = chosen.get('image');
  return { image: typeof image === 'string' ? image : undefined, items, appendTo };
}

/** The container's command followed by its args (the program first), e.g. ["kube-apiserver", "--a=b"]. */
export function readArgs(bytes: Buffer, container?: string): string[] {
  return findContainer(decode(bytes, 'the manifest'), container).items.map((i) => i.value);
}

/** The container's image, e.g. "registry.k8s.io/kube-apiserver:v1.36.3". */
export function readImage(bytes: Buffer, container?: string): string | undefined {
  return findContainer(decode(bytes, 'the manifest'), container).image;
}

/** `value` as a YAML scalar in the given style, falling back to double quotes when plain would not read back. */
function renderScalar(value: string, style: Scalar['type']): string {
  if (style === 'QUOTE_SINGLE') return `'${value.replaceAll("'", "''")}'`;
  if (style === 'QUOTE_DOUBLE') return JSON.stringify(value);
  const plain = stringify(value, { lineWidth: 0 }).trimEnd();
  return plain === value ? value : JSON.stringify(value);
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

/** Offset just past the line's ending (or the end of the text). */
function nextLineStart(text: string, offset: number): number {
  const nl = text.indexOf('\n', offset);
  return nl < 0 ? text.length : nl + 1;
}

/**
 * Applies the changes to the flags of `container` (by name; default: the first container). Changes
 * already in effect leave the bytes as they are.
 */
export function edit(bytes: Buffer, changes: readonly FlagChange[], container?: string): Buffer {
  const text = decode(bytes, 'the manifest');
  const { items, appendTo } = findContainer(text, container);
  const edits = planArgEdits(
    items.map((i) => i.value),
    changes,
  );
  if (edits.length === 0) return bytes;

  const splices: Array<[number, number, string]> = [];
  const appended: string[] = [];
  for (const e of edits) {
    if (e.op === 'append') {
      appended.push(...e.tokens);
      continue;
    }
    for (let i = e.start; i < e.end; i++) {
      const item = items[i] as Item;
      const [start, valueEnd] = item.node.range ?? [0, 0];
      const token = e.tokens[i - e.start];
      if (token === undefined) {
        // Remove the item's whole line: "<indent>- value<eol>".
        const from = lineStart(text, start);
        if (!/^\s*-\s+$/.test(text.slice(from, start))) {
          throw new EditError(
            `the list item ${item.value} shares its line with other content; edit it by hand`,
          );
        }
        splices.push([from, nextLineStart(text, valueEnd), '']);
      } else if (token !== item.value) {
        splices.push([start, valueEnd, renderScalar(token, item.node.type)]);
      }
    }
  }
  if (appended.length > 0) {
    const last = appendTo?.items.at(-1);
    if (!appendTo || !isScalar(last) || !last.range) {
      throw new EditError('the container has no command list to add flags to');
    }
    const [start, valueEnd] = last.range;
    const from = lineStart(text, start);
    const prefix = text.slice(from, start);
    if (!/^\s*-\s+$/.test(prefix))
      throw new EditError('the command list is not one item per line; edit it by hand');
    const at = nextLineStart(text, valueEnd);
    const lineEnding = text.slice(valueEnd, at).match(/\r?\n$/)?.[0];
    const eol = lineEnding ?? eolOf(text);
    const lines = appended.map((t) => `${prefix}${renderScalar(t, last.type)}`);
    // After the last item's line; at the end of a file without a final newline, start a new line first.
    const addition = lineEnding ? lines.map((l) => l + eol).join('') : lines.map((l) => eol + l).join('');
    splices.push([at, at, addition]);
  }
  return Buffer.from(splice(text, splices), 'utf8');
}
