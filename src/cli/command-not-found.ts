/**
 * oclif's command_not_found hook (package.json): a mistyped command is one line naming the closest
 * command, exit 2, instead of oclif's "command nodes:lsit not found". oclif reads `ccm version extra`
 * as the command "version extra": a command followed by a word it does not take is an unexpected
 * argument, as the same word after a flag is.
 */

import { closest } from '../closest.js';
import { EXIT_USAGE } from './errors.js';

export async function commandNotFound(options: {
  id: string;
  config: {
    bin: string;
    commandIDs: string[];
    findCommand?: (id: string) => { args?: Record<string, unknown> } | undefined;
  };
}): Promise<never> {
  const { bin, commandIDs } = options.config;
  const words = options.id.split(':');
  // The longest run of leading words that is a command: the rest are its arguments.
  for (let n = words.length - 1; n > 0; n--) {
    const id = words.slice(0, n).join(':');
    if (!commandIDs.includes(id)) continue;
    const command = words.slice(0, n).join(' ');
    const takesArguments = Object.keys(options.config.findCommand?.(id)?.args ?? {}).length > 0;
    process.stderr.write(
      `${bin}: unexpected argument "${words[n]}"; ${
        takesArguments
          ? `\`${bin} ${command} --help\` shows what it takes`
          : `${bin} ${command} takes no arguments, only flags`
      }\n`,
    );
    process.exit(EXIT_USAGE);
  }
  const typed = words.join(' ');
  const near = closest(
    typed,
    commandIDs.map((c) => c.replaceAll(':', ' ')),
  );
  const hint = near ? `did you mean "${bin} ${near}"? ` : '';
  process.stderr.write(`${bin}: "${typed}" is not a ${bin} command; ${hint}\`${bin} --help\` lists them\n`);
  process.exit(EXIT_USAGE);
}
