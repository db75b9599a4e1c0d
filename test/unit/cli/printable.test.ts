/** What reaches the operator's terminal from outside data: printable(), one-line titles, debug stacks. */
import { describe, expect, it } from 'vitest';
import { debugStack } from '../../../src/cli/base-command.js';
import { screenedTasks } from '../../../src/cli/task-list.js';
import { printable, printableLine } from '../../../src/printable.js';

describe('printable', () => {
  it('turns the line and paragraph separators U+2028 and U+2029 into spaces', () => {
    expect(printable('spare\u2028FORGED-LS\u2029FORGED-PS')).toBe('spare FORGED-LS FORGED-PS');
    expect(printableLine('a\nb\u2028c')).toBe('a b c');
  });

  it('shows zero-width and other invisible format characters, so worker-3 and worker-3+them differ', () => {
    expect(printable('worker-3\u200b\u200c\u200d\u2060\ufeff')).toBe(
      'worker-3<U+200B><U+200C><U+200D><U+2060><U+FEFF>',
    );
    expect(printable('a\u00adb')).toBe('a<U+00AD>b');
    // Bidirectional overrides are removed, as before.
    expect(printable('a\u202eb\u2066c')).toBe('abc');
    expect(printable('worker-3')).toBe('worker-3');
  });
});

describe('debugStack (--log-level=debug)', () => {
  it("keeps a cloud message's newlines from forging a `ccm: …` line", () => {
    const err = new Error('the cloud says\nccm: all good\n\u001b[2Jdone');
    const lines = debugStack(err).split('\n');
    expect(lines[0]).toBe('Error: the cloud says ccm: all good done');
    for (const line of lines.slice(1)) expect(line).toMatch(/^ {4}\S/);
  });
});

describe('screenedTasks (every listr2 task list of ccm)', () => {
  it('screens the titles a task starts with and sets, its output, and those of its subtasks', async () => {
    const { Listr } = await import('listr2');
    const H = '\u001b]0;PWNED\u0007\u001b[2J\nFORGED';
    let output = '';
    const list = new Listr(
      screenedTasks([
        {
          title: `Connect to ${H}`,
          task: (_ctx, task) => {
            task.output = `output ${H}`;
            output = task.output;
            return task.newListr([
              {
                title: `host${H}`,
                task: (_c, sub) => {
                  sub.title = `host: failed (${H})`;
                },
              },
            ]);
          },
        },
        {
          title: 'Validate',
          task: (_ctx, task) => {
            expect(task.title).toBe('Validate');
            task.title = `Credentials valid: ${H}`;
          },
        },
      ]),
      { renderer: 'silent' },
    );
    await list.run();
    expect(list.tasks[0]?.title).toBe('Connect to  FORGED');
    expect(output).toBe('output \nFORGED');
    expect(list.tasks[0]?.subtasks?.[0]?.title).toBe('host: failed ( FORGED)');
    expect(list.tasks[1]?.title).toBe('Credentials valid:  FORGED');
  });
});
