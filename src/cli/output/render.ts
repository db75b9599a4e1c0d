import chalk, { Chalk, type ChalkInstance, type ColorSupportLevel } from 'chalk';
import { printable, printableLine } from '../../printable.js';
import type { View } from './flags.js';
import { type Column, jsonText, type Report, type Tone } from './report.js';
import { ELLIPSIS, fitWidths, logfmtValue, naturalCompare, plural, truncate, widthOf } from './text.js';

/** Where the output goes. */
export interface Terminal {
  tty: boolean;
  /** Cells per line; Infinity: nothing is cut. */
  width: number;
  /** Lines on the screen; Infinity: every row is listed. */
  height: number;
  colour: ColorSupportLevel;
}

/** Standard output as it is: a terminal's size and colours, or a pipe or file (no limits, no colour). */
export function stdoutTerminal(
  stream: { isTTY?: boolean; columns?: number; rows?: number } = process.stdout,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Terminal {
  if (!stream.isTTY)
    return { tty: false, width: Number.POSITIVE_INFINITY, height: Number.POSITIVE_INFINITY, colour: 0 };
  const noColour = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  return {
    tty: true,
    width: stream.columns || 80,
    height: stream.rows || 24,
    colour: noColour ? 0 : chalk.level,
  };
}

const GAP = '   ';

/** The text a report shows in a view, without a final newline ('' when there is nothing to say). */
export async function render<Row>(
  report: Report<Row>,
  view: View,
  terminal: Terminal,
  options: { noHeaders?: boolean; template?: string; allowMissingKeys?: boolean } = {},
): Promise<string> {
  const document = report.documents?.[view as keyof NonNullable<Report['documents']>];
  if (document) return document().trimEnd();
  switch (view) {
    case 'jsonpath': {
      const { jsonpathText } = await import('./templates.js');
      return jsonpathText(templateOf(options.template, 'jsonpath'), report.data, {
        ...(options.allowMissingKeys === false ? { allowMissingKeys: false } : {}),
      });
    }
    case 'custom-columns': {
      const { customColumnsText } = await import('./templates.js');
      return customColumnsText(
        templateOf(options.template, 'custom-columns'),
        ordered(report, report.rows),
        options.noHeaders ?? false,
      );
    }
    case 'json':
      return jsonText(report.data);
    case 'yaml': {
      const { stringify } = await import('./yaml-text.js');
      return stringify(report.data, { lineWidth: 0 }).trimEnd();
    }
    case 'name': {
      const shown = screened(report);
      return ordered(shown, shown.named ? shown.rows.filter(shown.named) : listed(shown))
        .map((row) => `${typeof shown.kind === 'string' ? shown.kind : shown.kind(row)}/${shown.name(row)}`)
        .join('\n');
    }
    default:
      return new HumanView(screened(report), view, terminal, options.noHeaders ?? false).text();
  }
}

/** The text after `jsonpath=` or `custom-columns=` in -o's value. */
function templateOf(output: string | undefined, kind: string): string {
  return output?.startsWith(`${kind}=`) ? output.slice(kind.length + 1) : '';
}

/**
 * The report as the views for a person read it: every string they show passed through printable(),
 * so that text from Kubernetes or a cloud (a tenant's annotation, a Node's provider ID, an instance's
 * name, an API's error message) cannot move the cursor, clear the screen or set the title, and so
 * rewrite what the operator reads. Summary, notes and errors are one line each: a newline in such
 * text would make a line of its own. The data (-o json / yaml) stays exact.
 * Each field is named below, so that a field added to Report or Column does not compile until it is
 * screened here too.
 */
function screened<Row>(report: Report<Row>): Report<Row> {
  const line = printableLine;
  const text = (value: string | undefined) => (value === undefined ? undefined : printable(value));
  const kind = report.kind;
  const fields: { [K in keyof Required<Report<Row>>]: Report<Row>[K] } = {
    data: report.data,
    kind: typeof kind === 'string' ? line(kind) : (row) => line(kind(row)),
    noun: report.noun,
    rows: report.rows,
    keepOrder: report.keepOrder,
    columns: report.columns.map((column) => screenedColumn(column, text)),
    name: (row) => line(report.name(row)),
    named: report.named,
    tone: report.tone,
    summary: line(report.summary),
    notes: report.notes?.map(line),
    errors: report.errors?.map(line),
    failed: report.failed,
    exitCode: report.exitCode,
    documents: report.documents,
  };
  return fields;
}

function screenedColumn<Row>(
  column: Column<Row>,
  text: (value: string | undefined) => string | undefined,
): Column<Row> {
  const below = column.below;
  const fields: { [K in keyof Required<Column<Row>>]: Column<Row>[K] } = {
    header: column.header,
    value: (row) => text(column.value(row)),
    wide: column.wide,
    toned: column.toned,
    give: column.give,
    blank: column.blank,
    key: column.key,
    logValue: column.logValue && ((row) => text(column.logValue?.(row))),
    wideBelow: column.wideBelow,
    below: below && {
      label: below.label,
      lines: below.lines && ((row) => (below.lines?.(row) ?? []).map((l) => text(l) ?? '')),
    },
  };
  return fields;
}

function listed<Row>(report: Report<Row>): Row[] {
  return report.rows.filter((row) => report.tone(row) !== 'unchanged');
}

/** Natural order by name (or the report's own order), failures last. */
function ordered<Row>(report: Report<Row>, rows: readonly Row[]): Row[] {
  return rows
    .map((row) => ({ row, name: report.name(row), failed: report.tone(row) === 'failed' }))
    .sort(
      (a, b) =>
        Number(a.failed) - Number(b.failed) || (report.keepOrder ? 0 : naturalCompare(a.name, b.name)),
    )
    .map((r) => r.row);
}

class HumanView<Row> {
  private readonly style: ChalkInstance;

  constructor(
    private readonly report: Report<Row>,
    private readonly view: 'table' | 'wide' | 'lines' | 'quiet',
    private readonly terminal: Terminal,
    /** kubectl's --no-headers: the rows alone, for a script (no summary line, no column header). */
    private readonly noHeaders = false,
  ) {
    this.style = new Chalk({ level: terminal.colour });
  }

  text(): string {
    const { report, view, style } = this;
    const errors = (report.errors ?? []).flatMap((e) => this.wrap(e).map((l) => style.red(l)));
    if (view === 'quiet') {
      const failed = ordered(
        report,
        report.rows.filter((r) => report.tone(r) === 'failed'),
      );
      const rows = this.terminal.tty ? this.table(failed, false) : this.logLines(failed);
      return [...(failed.length > 0 ? rows : []), ...errors].join('\n');
    }
    const summary = this.wrap(report.summary).map((l) => (report.failed ? style.red(l) : l));
    const notes = (report.notes ?? []).flatMap((n) => this.wrap(n));
    const rows = ordered(report, view === 'wide' ? report.rows : listed(report));
    let body: string[];
    if (view === 'lines') body = this.logLines(rows);
    else if (rows.length === 0) body = [];
    else if (view === 'wide') body = this.table(rows, true);
    else {
      // A screenful: the summary, the header, the rows that fit, a line for the rest, the shell prompt.
      const room = this.terminal.height - summary.length - notes.length - errors.length - 2;
      const failed = rows.filter((r) => report.tone(r) === 'failed');
      const others = rows.filter((r) => report.tone(r) !== 'failed');
      const shown = rows.length <= room ? others : others.slice(0, Math.max(0, room - 1 - failed.length));
      body = this.table([...shown, ...failed], false);
      const more = others.length - shown.length;
      if (more > 0) {
        // After the rows shown, before the failures: failures stay last.
        body.splice(
          1 + shown.length,
          0,
          style.dim(
            `${ELLIPSIS} and ${plural(more, [`more ${report.noun[0]}`, `more ${report.noun[1]}`])} (-o wide or -o name lists them all)`,
          ),
        );
      }
    }
    if (this.noHeaders) {
      const rowsOnly = view === 'lines' || body.length === 0 ? body : body.slice(1);
      return [...rowsOnly, ...errors].join('\n');
    }
    return [...summary, ...body, ...notes, ...errors].join('\n');
  }

  /** Words to lines of the terminal's width (or less); a word longer than a line is cut. */
  private wrap(text: string, width = this.terminal.width): string[] {
    if (widthOf(text) <= width) return [text];
    const lines: string[] = [];
    let line = '';
    for (const word of text.split(' ')) {
      const next = line === '' ? word : `${line} ${word}`;
      if (widthOf(next) <= width) {
        line = next;
        continue;
      }
      if (line !== '') lines.push(line);
      line = truncate(word, width);
    }
    if (line !== '') lines.push(line);
    return lines;
  }

  private columns(wide: boolean): readonly Column<Row>[] {
    return this.report.columns
      .filter((c) => wide || !c.wide)
      .map((c) => (wide && c.wideBelow && !c.below ? { ...c, below: { ...c.wideBelow } } : c));
  }

  /**
   * -o wide cuts nothing, so on a terminal too narrow for every column the terminal would wrap each
   * row at a column. Instead, columns move under the row as `header: value` until the rest fits: free
   * text first, then the -o wide ones, then others, right to left; never the row's name
   * (`give: 'last'`) or its result (`toned`).
   */
  private folded(
    columns: readonly Column<Row>[],
    naturalOf: (cols: readonly Column<Row>[]) => number[],
  ): Column<Row>[] {
    const fits = (cols: readonly Column<Row>[]) =>
      naturalOf(cols).reduce((a, b) => a + b, 0) + GAP.length * (cols.length - 1) <= this.terminal.width;
    if (fits(columns)) return [];
    const movable = columns.filter((c, i) => i > 0 && c.give !== 'last' && !c.toned).reverse();
    const rank = (c: Column<Row>) => (c.give === 'first' ? 0 : c.wide ? 1 : 2);
    const candidates = [...movable].sort((a, b) => rank(a) - rank(b));
    const moved: Column<Row>[] = [];
    for (const column of candidates) {
      moved.push(column);
      if (fits(columns.filter((c) => !moved.includes(c)))) break;
    }
    return moved;
  }

  /** The folded columns of a row, `header: value` in the table's order, a pair broken only when it alone is too long. */
  private foldedLines(row: Row, folded: readonly Column<Row>[]): string[] {
    if (folded.length === 0) return [];
    const indent = '    ';
    const width = this.terminal.width - indent.length;
    const lines: string[] = [];
    for (const c of this.report.columns.filter((c) => folded.includes(c))) {
      const pair = `${c.header.toLowerCase()}: ${oneLine(c.value(row)) || (c.blank ?? '-')}`;
      const last = lines.at(-1);
      if (last !== undefined && widthOf(`${last}, ${pair}`) <= width)
        lines[lines.length - 1] = `${last}, ${pair}`;
      else lines.push(...this.wrap(pair, width));
    }
    return lines.map((l) => `${indent}${l}`);
  }

  /** The lines a table shows under a row, for its `below` columns. */
  private linesBelow(row: Row, columns: readonly Column<Row>[]): string[] {
    const indent = '    ';
    return columns.flatMap((c) => {
      const lines = (c.below?.lines?.(row) ?? [c.value(row) ?? '']).map(oneLine).filter(Boolean);
      return lines.flatMap((text, i) => {
        const labelled = i === 0 && c.below?.label ? `${c.below.label}: ${text}` : text;
        return this.wrap(labelled, this.terminal.width - indent.length).map((l) => `${indent}${l}`);
      });
    });
  }

  private table(rows: readonly Row[], wide: boolean): string[] {
    const { report, style } = this;
    const all = this.columns(wide);
    const cellsOf = (cols: readonly Column<Row>[]) =>
      rows.map((row) => cols.map((c) => oneLine(c.value(row)) || (c.blank ?? '-')));
    const naturalOf = (cols: readonly Column<Row>[], cells: string[][]) =>
      cols.map((c, i) => Math.max(widthOf(c.header), ...cells.map((r) => widthOf(r[i] ?? ''))));
    let columns = all.filter((c) => !c.below);
    const folded = wide ? this.folded(columns, (cols) => naturalOf(cols, cellsOf(cols))) : [];
    columns = columns.filter((c) => !folded.includes(c));
    const below = all.filter((c) => c.below);
    const cells = cellsOf(columns);
    const natural = naturalOf(columns, cells);
    // -o wide cuts nothing: it is the view that shows everything.
    const room = wide ? Number.POSITIVE_INFINITY : this.terminal.width - GAP.length * (columns.length - 1);
    const widths = fitWidths(
      natural,
      room,
      columns.map((c) => c.give ?? 'normal'),
    );
    const line = (texts: readonly string[], paint: (text: string, column: number) => string) =>
      texts
        .map((text, i) => {
          const cut = truncate(text, widths[i] ?? 0);
          const padding = i === texts.length - 1 ? 0 : (widths[i] ?? 0) - widthOf(cut);
          return paint(cut, i) + ' '.repeat(padding);
        })
        .join(GAP)
        .trimEnd();
    const header = line(
      columns.map((c) => c.header),
      (t) => t,
    );
    const body = rows.flatMap((row, r) => {
      const tone = report.tone(row);
      const paint = TONES[tone](style);
      const under = [...this.foldedLines(row, folded), ...this.linesBelow(row, below)].map((l) =>
        tone === 'failed' ? paint(l) : style.dim(l),
      );
      if (tone === 'failed') return [paint(line(cells[r] ?? [], (t) => t)), ...under];
      return [line(cells[r] ?? [], (t, i) => (columns[i]?.toned ? paint(t) : t)), ...under];
    });
    return [header, ...body];
  }

  private logLines(rows: readonly Row[]): string[] {
    const { report, style } = this;
    const columns = this.columns(false);
    return rows.map((row) => {
      const pairs = columns.flatMap((c) => {
        const value = oneLine((c.logValue ?? c.value)(row));
        return value ? [`${c.key ?? c.header.toLowerCase().replaceAll(' ', '_')}=${logfmtValue(value)}`] : [];
      });
      const text = pairs.join(' ');
      return report.tone(row) === 'failed' ? style.red(text) : text;
    });
  }
}

const TONES: Record<Tone, (style: ChalkInstance) => (text: string) => string> = {
  changed: (s) => s.green,
  warning: (s) => s.yellow,
  ok: () => (t) => t,
  failed: (s) => s.red,
  unchanged: (s) => s.dim,
};

/** Cells and log values are one line: newlines and tabs of a message become spaces. */
function oneLine(text: string | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').trim();
}
