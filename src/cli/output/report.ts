import type { View } from './flags.js';
import type { Give } from './text.js';

/**
 * What a command returns: its typed result (printed as is by -o json / -o yaml) plus how to show it
 * to a person (rows and columns). The base command renders it; no command prints its own result.
 */
export interface Report<Row = unknown> {
  /** The command's result for scripts: -o json and -o yaml print exactly this. */
  data: unknown;
  /** Object kind for -o name: `node` prints node/<name>; a function when rows are of several kinds. */
  kind: string | ((row: Row) => string);
  /** How one row and several rows are called in counts: ['Node', 'Nodes']. */
  noun: readonly [string, string];
  rows: readonly Row[];
  /** The rows are in an order of their own (e.g. the order to apply them in): not sorted by name. */
  keepOrder?: boolean;
  columns: readonly Column<Row>[];
  name: (row: Row) => string;
  /** Which rows -o name prints (default: all but unchanged ones); `doctor` names only what needs care. */
  named?: (row: Row) => boolean;
  tone: (row: Row) => Tone;
  /** The first line of every human view: what happened, in one line (red when the command failed). */
  summary: string;
  /** Lines after the table (hints, grouped notes). */
  notes?: readonly string[];
  /** Failures not tied to one row; shown in red, kept by --quiet. */
  errors?: readonly string[];
  /** Exit status 1 (or `exitCode`). */
  failed: boolean;
  /** The exit status of a failed report when it is not 1 (`nodes init`'s 3 for a held pass). */
  exitCode?: number;
  /**
   * Views in which the result is a document of its own rather than a summary and a table (the YAML
   * of `ccm manifests`, which must stay appliable as it is printed).
   */
  documents?: Partial<Record<View, () => string>>;
}

/**
 * How a row is shown.
 * - changed / warning / ok: listed, its toned cells green / yellow / plain;
 * - failed: listed last, in red, and the only rows --quiet keeps;
 * - unchanged: counted in the summary, listed only by -o wide.
 */
export type Tone = 'changed' | 'warning' | 'ok' | 'failed' | 'unchanged';

export interface Column<Row> {
  header: string;
  value: (row: Row) => string | undefined;
  /** Shown only by -o wide. */
  wide?: boolean;
  /** Coloured by the row's tone. */
  toned?: boolean;
  /**
   * When the table is wider than the terminal: 'first' for free text (cut first), 'last' for what
   * identifies a row (cut only as a last resort), else cut evenly with the others.
   */
  give?: Give;
  /** What an empty cell shows in a table (default "-"). */
  blank?: string;
  /** Key in the plain log lines (default: the header in lower case, spaces as "_"). */
  key?: string;
  /** The value in the plain log lines, when a table's cell is a mark (✓) a log should spell as a word. */
  logValue?: (row: Row) => string | undefined;
  /**
   * Long text a table shows on lines of its own under the row (indented, wrapped at the terminal's
   * width, never cut), not as a column: a fix, a list of changes. Log lines keep it as a key.
   */
  /**
   * With -o wide, shown under the row as `below` is (labelled), not as a column: free text that
   * -o wide, which cuts nothing, would otherwise let run past the terminal's width.
   */
  wideBelow?: { label?: string };
  below?: {
    /** Put before the first line, e.g. "fix". */
    label?: string;
    /** One line each (default: the value, as one line). */
    lines?: (row: Row) => readonly string[];
  };
}

export type { Give } from './text.js';

const BRAND = Symbol.for('ccm.report');

/** Marks a command's return value as a Report, so the base command renders it. */
export function defineReport<Row>(report: Report<Row>): Report<Row> {
  return Object.assign(report, { [BRAND]: true });
}

export function isReport(value: unknown): value is Report {
  return typeof value === 'object' && value !== null && BRAND in value;
}

/** -o json: the data, two-space indented, never coloured. */
export function jsonText(data: unknown): string {
  return JSON.stringify(data, null, 2);
}
