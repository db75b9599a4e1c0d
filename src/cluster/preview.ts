import chalk from 'chalk';
import { createTwoFilesPatch } from 'diff';
import { printable } from '../printable.js';

/** A unified diff of one file, coloured for a terminal (chalk turns colour off when not a TTY). */
export function unifiedDiff(label: string, before: string, after: string): string {
  const name = label.replace(/^\//, '');
  const patch = createTwoFilesPatch(`a/${name}`, `b/${name}`, before, after, undefined, undefined, {
    context: 3,
  });
  // The files come from the nodes: what they hold must not drive the operator's terminal.
  return printable(patch)
    .split('\n')
    .filter((line) => !line.startsWith('====='))
    .map((line) => {
      if (line.startsWith('+++') || line.startsWith('---')) return chalk.bold(line);
      if (line.startsWith('+')) return chalk.green(line);
      if (line.startsWith('-')) return chalk.red(line);
      if (line.startsWith('@@')) return chalk.cyan(line);
      return line;
    })
    .join('\n')
    .trimEnd();
}
