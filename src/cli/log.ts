import chalk from 'chalk';
import { type DestinationStream, type Logger, pino } from 'pino';
import { printableLine } from '../printable.js';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

const LEVEL_STYLE: Record<number, (s: string) => string> = {
  20: (s) => chalk.gray(s),
  30: (s) => chalk.green(s),
  40: (s) => chalk.yellow(s),
  50: (s) => chalk.red(s),
  60: (s) => chalk.bgRed.white(s),
};
const LEVEL_NAME: Record<number, string> = { 20: 'DBG', 30: 'INF', 40: 'WRN', 50: 'ERR', 60: 'FTL' };

/**
 * One short line per record for a person at a terminal: time, level, controller, Node, message. The
 * message may quote a Service's annotation or a cloud's answer: printable, and one line.
 */
export function terminalLine(json: string): string {
  const rec = JSON.parse(json) as {
    level: number;
    time: number;
    msg?: string;
    controller?: string;
    node?: string;
  };
  const time = new Date(rec.time).toTimeString().slice(0, 8);
  const level = (LEVEL_STYLE[rec.level] ?? ((s: string) => s))(LEVEL_NAME[rec.level] ?? String(rec.level));
  const shown = printableLine;
  const where = [rec.controller && chalk.cyan(shown(rec.controller)), rec.node && chalk.bold(shown(rec.node))]
    .filter(Boolean)
    .join(' ');
  return `${chalk.dim(time)} ${level} ${where ? `${where} ` : ''}${shown(rec.msg ?? '')}\n`;
}

/**
 * The logger of `ccm run`: JSON lines (pino) when stderr is not a terminal, short coloured lines when
 * it is. Credentials never enter a log record; the redaction list is a second line of defence.
 */
export function createLogger(
  level: LogLevel,
  options: { pretty?: boolean; destination?: NodeJS.WritableStream } = {},
): Logger {
  const out = options.destination ?? process.stderr;
  const pretty = options.pretty ?? Boolean((out as NodeJS.WriteStream).isTTY);
  const destination: DestinationStream = pretty
    ? { write: (line: string) => void out.write(terminalLine(line)) }
    : { write: (line: string) => void out.write(line) };
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: ['token', 'password', 'authorization', '*.token', '*.password', '*.authorization'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
