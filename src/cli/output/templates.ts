import { JSONPath } from 'jsonpath-plus';
import { printable } from '../../printable.js';
import { widthOf } from './text.js';

/**
 * kubectl's `-o jsonpath=` and `-o custom-columns=`, over a command's report. kubectl's JSONPath
 * (k8s.io/client-go util/jsonpath) is a template: text, and `{…}` holding a path (`.nodes[*].name`),
 * a quoted string (`{"\n"}`), or `range <path>` … `end`. The paths themselves are evaluated by
 * jsonpath-plus, with its safe evaluator for filters (`[?(@.status=="failed")]`).
 */

type Piece =
  | { kind: 'text'; text: string }
  | { kind: 'path'; path: string }
  | { kind: 'range'; path: string; body: Piece[] };

/** A template kubectl would refuse: `-o`'s parse error (exit 2), said before the command runs. */
export class TemplateError extends Error {}

/**
 * `--allow-missing-template-keys=false`: a path names a field that none of the objects on its way
 * has (client-go jsonpath's `<field> is not found`); exit 1, as kubectl's.
 */
export class MissingKeyError extends Error {
  override name = 'MissingKeyError';
}

/** `.a.b[*]` (kubectl's spelling, `$` optional) as jsonpath-plus reads it. */
function jsonPath(expression: string): string {
  const trimmed = expression.trim();
  if (trimmed === '' || trimmed === '.' || trimmed === '$' || trimmed === '@') return '$';
  if (trimmed.startsWith('$')) return trimmed;
  if (trimmed.startsWith('@')) return `$${trimmed.slice(1)}`;
  return trimmed.startsWith('.') || trimmed.startsWith('[') ? `$${trimmed}` : `$.${trimmed}`;
}

function evaluate(expression: string, json: unknown, strict = false): unknown[] {
  const path = jsonPath(expression);
  let found: unknown[];
  try {
    found = query(path, json);
  } catch (err) {
    throw new TemplateError(`"${expression}" is not a JSONPath (${(err as Error).message})`);
  }
  if (strict && found.length === 0) missingField(path, json);
  return found;
}

function query(path: string, json: unknown): unknown[] {
  return JSONPath({ path, json: json as object, wrap: true, eval: 'safe' }) ?? [];
}

/**
 * client-go's rule (util/jsonpath, evalField without allowMissingKeys): a field step that finds
 * nothing in objects it was given is an error; a step with nothing to look in (an empty list, a
 * filter that kept nothing) is not, so a path to an empty list still prints nothing.
 */
function missingField(path: string, json: unknown): void {
  const steps = JSONPath.toPathArray(path);
  let before: unknown[] = [json];
  for (let i = 1; i < steps.length; i++) {
    const step = steps[i] as string;
    const after = query(JSONPath.toPathString(steps.slice(0, i + 1)), json);
    if (after.length === 0) {
      const field = !/^(\*|\.\.|[?(].*|-?\d*(:-?\d*){0,2}|.*,.*)$/.test(step) && steps[i - 1] !== '..';
      if (field && before.some((v) => v !== null && v !== undefined))
        throw new MissingKeyError(`${step} is not found`);
      return;
    }
    before = after;
  }
}

function tokens(template: string): Piece[] {
  const out: Piece[] = [];
  const stack: { path: string; body: Piece[] }[] = [];
  const push = (p: Piece) => (stack.at(-1)?.body ?? out).push(p);
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      push({ kind: 'text', text: template.slice(i) });
      break;
    }
    if (open > i) push({ kind: 'text', text: template.slice(i, open) });
    const close = template.indexOf('}', open);
    if (close < 0) throw new TemplateError(`jsonpath template "${template}" has a { without its }`);
    const inside = template.slice(open + 1, close).trim();
    i = close + 1;
    const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(inside);
    if (quoted) {
      const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r' };
      push({ kind: 'text', text: (quoted[1] ?? '').replace(/\\(.)/g, (_, c: string) => escapes[c] ?? c) });
    } else if (inside.startsWith('range ')) {
      stack.push({ path: inside.slice('range '.length), body: [] });
    } else if (inside === 'end') {
      const range = stack.pop();
      if (!range) throw new TemplateError(`jsonpath template "${template}" has an {end} without its {range}`);
      push({ kind: 'range', path: range.path, body: range.body });
    } else {
      push({ kind: 'path', path: inside });
    }
  }
  if (stack.length > 0)
    throw new TemplateError(`jsonpath template "${template}" has a {range} without its {end}`);
  return out;
}

function valueText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function run(pieces: readonly Piece[], json: unknown, strict: boolean): string {
  return pieces
    .map((p) => {
      if (p.kind === 'text') return p.text;
      if (p.kind === 'path') return evaluate(p.path, json, strict).map(valueText).join(' ');
      return evaluate(p.path, json, strict)
        .map((item) => run(p.body, item, strict))
        .join('');
    })
    .join('');
}

/** Refuses a template before the command runs: its syntax, and each path as JSONPath reads it. */
export function checkTemplate(kind: 'jsonpath' | 'custom-columns', template: string): void {
  if (kind === 'custom-columns') {
    customColumnsText(template, [], true);
    return;
  }
  const paths = (pieces: readonly Piece[]): string[] =>
    pieces.flatMap((p) =>
      p.kind === 'path' ? [p.path] : p.kind === 'range' ? [p.path, ...paths(p.body)] : [],
    );
  for (const path of paths(tokens(template))) evaluate(path, {});
}

/**
 * `-o jsonpath=TEMPLATE`: the template over the report's data (what -o json prints). A field no
 * object has prints nothing, as kubectl's `--allow-missing-template-keys` (default true) has it;
 * with `allowMissingKeys: false` it is kubectl's error instead.
 */
export function jsonpathText(
  template: string,
  data: unknown,
  options: { allowMissingKeys?: boolean } = {},
): string {
  try {
    return run(tokens(template), data, options.allowMissingKeys === false);
  } catch (err) {
    if (err instanceof MissingKeyError)
      throw new MissingKeyError(`error executing jsonpath ${JSON.stringify(template)}: ${err.message}`);
    throw err;
  }
}

/**
 * `-o custom-columns=HEADER:.path,…` over the report's rows: one column per pair, `<none>` for what
 * a row lacks, as kubectl prints it. Cells are screened as every table is (printable()).
 */
export function customColumnsText(spec: string, rows: readonly unknown[], noHeaders: boolean): string {
  const columns = spec.split(',').map((pair) => {
    const at = pair.indexOf(':');
    if (at <= 0 || at === pair.length - 1)
      throw new TemplateError(`custom-columns "${pair}" is not HEADER:.path (e.g. NAME:.name)`);
    return { header: pair.slice(0, at), path: pair.slice(at + 1) };
  });
  const cells = rows.map((row) =>
    columns.map((c) => {
      const found = evaluate(c.path, row);
      return found.length === 0 ? '<none>' : printable(found.map(valueText).join(',')).replaceAll('\n', ' ');
    }),
  );
  const table = noHeaders ? cells : [columns.map((c) => printable(c.header)), ...cells];
  const widths = columns.map((_, i) => Math.max(...table.map((r) => widthOf(r[i] ?? ''))));
  const pad = (cell: string, i: number) => cell + ' '.repeat(Math.max(0, (widths[i] ?? 0) - widthOf(cell)));
  return table
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : pad(cell, i))).join('   '))
    .join('\n');
}
