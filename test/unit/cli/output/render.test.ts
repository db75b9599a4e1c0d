/** The render rules every command gets, on a made-up report with nothing command-specific. */
import { describe, expect, it } from 'vitest';
import { render, stdoutTerminal, type Terminal } from '../../../../src/cli/output/render.js';
import { defineReport, type Tone } from '../../../../src/cli/output/report.js';
import { widthOf } from '../../../../src/cli/output/text.js';

interface Row {
  id: string;
  state: 'created' | 'kept' | 'broken';
  detail?: string;
}

function report(rows: Row[]) {
  const tones: Record<Row['state'], Tone> = { created: 'changed', kept: 'unchanged', broken: 'failed' };
  return defineReport<Row>({
    data: { rows },
    kind: 'thing',
    noun: ['thing', 'things'],
    rows,
    name: (r) => r.id,
    tone: (r) => tones[r.state],
    columns: [
      { header: 'ID', value: (r) => r.id, give: 'last' },
      { header: 'STATE', value: (r) => r.state, toned: true },
      { header: 'DETAIL', value: (r) => r.detail, give: 'first', blank: '' },
    ],
    summary: `${rows.length} things`,
    failed: rows.some((r) => r.state === 'broken'),
  });
}

const screen: Terminal = { tty: true, width: 80, height: 24, colour: 0 };
const many = (n: number, state: Row['state']) =>
  Array.from({ length: n }, (_, i) => ({ id: `thing-${i + 1}`, state, detail: `detail of thing ${i + 1}` }));

describe('human views', () => {
  it('a terminal gets at most a screenful when nothing failed, however many rows changed', async () => {
    const text = await render(report(many(5000, 'created')), 'table', screen);
    const lines = text.split('\n');
    // the screen keeps one line for the shell prompt
    expect(lines.length).toBeLessThanOrEqual(screen.height - 1);
    expect(lines[0]).toBe('5000 things');
    expect(lines[2]).toMatch(/^thing-1 /);
    expect(lines[3]).toMatch(/^thing-2 /);
    expect(lines.at(-1)).toBe('… and 4,980 more things (-o wide or -o name lists them all)');
  });

  it('failures are never left out for the screen: all of them, last', async () => {
    const rows = [...many(100, 'created'), ...many(30, 'broken').map((r) => ({ ...r, id: `bad-${r.id}` }))];
    const lines = (await render(report(rows), 'table', screen)).split('\n');
    expect(lines.filter((l) => l.startsWith('bad-'))).toHaveLength(30);
    expect(lines.at(-1)).toMatch(/^bad-thing-30 /);
    expect(lines.some((l) => l.startsWith('… and 100 more things'))).toBe(true);
  });

  it('off a terminal, every changed or failed row gets its line', async () => {
    const pipe = stdoutTerminal({ isTTY: false });
    const text = await render(report(many(5000, 'created')), 'lines', pipe);
    expect(text.split('\n')).toHaveLength(5001);
    expect(text.split('\n')[5000]).toBe('id=thing-5000 state=created detail="detail of thing 5000"');
  });

  it('rows that did not change are counted, not listed, except by -o wide', async () => {
    const rows = [...many(3, 'kept'), { id: 'new-1', state: 'created' as const }];
    expect((await render(report(rows), 'table', screen)).split('\n').slice(1)).toEqual([
      'ID      STATE     DETAIL',
      'new-1   created',
    ]);
    expect((await render(report(rows), 'name', screen)).split('\n')).toEqual(['thing/new-1']);
    expect((await render(report(rows), 'wide', screen)).split('\n')).toHaveLength(6);
  });

  it('no line is wider than the terminal, and no cell is wrapped', async () => {
    const long = [{ id: 'x', state: 'broken' as const, detail: 'word '.repeat(100) }];
    for (const width of [40, 60, 80, 200]) {
      const text = await render(report(long), 'table', { ...screen, width });
      for (const line of text.split('\n')) expect(widthOf(line)).toBeLessThanOrEqual(width);
    }
  });

  it('--quiet prints nothing when nothing failed', async () => {
    expect(await render(report(many(10, 'created')), 'quiet', screen)).toBe('');
  });

  it('colour only on a colour terminal; NO_COLOR turns it off', async () => {
    const colourful = stdoutTerminal({ isTTY: true, columns: 100, rows: 30 }, {});
    const plain = stdoutTerminal({ isTTY: true, columns: 100, rows: 30 }, { NO_COLOR: '1' });
    expect(plain.colour).toBe(0);
    expect(plain).toMatchObject({ width: 100, height: 30 });
    const rows = many(1, 'broken');
    expect(await render(report(rows), 'table', plain)).not.toContain('\u001b[');
    if (colourful.colour > 0) expect(await render(report(rows), 'table', colourful)).toContain('\u001b[31m');
    expect(stdoutTerminal({ isTTY: false }, { FORCE_COLOR: '3' }).colour).toBe(0);
  });
});

describe('text from elsewhere in the human views', () => {
  // Title, clear screen, cursor up; a CSI by its 8-bit code; a bidirectional override; a line of its own.
  const HOSTILE = '\u001b]0;x\u0007\u001b[2J\u001b[1A\u009b2J\u202e\nFORGED';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;
  // What chalk itself writes on a colour terminal: SGR sequences, and only those.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing chalk's own escapes
  const SGR = /\u001b\[[0-9;]*m/g;

  const hostile = () =>
    defineReport<Row>({
      ...report([{ id: `bad${HOSTILE}`, state: 'broken', detail: `detail${HOSTILE}` }]),
      kind: (r) => `thing${r.state === 'broken' ? HOSTILE : ''}`,
      columns: [
        { header: 'ID', value: (r) => r.id },
        { header: 'DETAIL', value: (r) => r.detail, logValue: (r) => `logged${r.detail}` },
        { header: 'FIX', value: (r) => `fix${r.detail}`, below: { label: 'fix' } },
        {
          header: 'MORE',
          value: () => undefined,
          below: { lines: (r) => [`first${r.detail}`, `second${HOSTILE}`] },
        },
      ],
      summary: `summary${HOSTILE}`,
      notes: [`note${HOSTILE}`],
      errors: [`error${HOSTILE}`],
    });

  it('no view for a person shows a control character of the data, nor a line it made; colour stays', async () => {
    for (const colour of [0, 3] as const) {
      for (const view of ['table', 'wide', 'lines', 'quiet', 'name'] as const) {
        const text = await render(hostile(), view, { ...screen, colour });
        expect(text.replace(SGR, ''), `${view}, colour ${colour}`).not.toMatch(CONTROL);
        expect(text, view).not.toMatch(/^FORGED/m);
        if (view === 'table' && colour) expect(text).toContain('\u001b[31m');
      }
    }
    const wide = await render(hostile(), 'wide', screen);
    for (const part of ['summary', 'note', 'error', 'bad', 'detail', 'fix: fix', 'first', 'second'])
      expect(wide).toContain(part);
    expect(await render(hostile(), 'lines', screen)).toContain('logged');
  });

  it('-o json and -o yaml keep the data exact', async () => {
    const data = { text: HOSTILE };
    const exact = { ...hostile(), data };
    expect(JSON.parse(await render(exact, 'json', screen))).toEqual(data);
    expect(await render(exact, 'yaml', screen)).toContain('\\e]0;x\\a\\e[2J');
  });
});
