/**
 * oclif's command_not_found hook (package.json): a mistyped command is one line naming the closest
 * command, exit 2, instead of oclif's "command nodes:lsit not found".
 */

import { closest } from '../closest.js';
import { EXIT_USAGE } from './errors.js';

export async function commandNotFound(options: {
  id: string;
  config: { bin: string; commandIDs: string[] };
}): Promise<never> {
  const { bin, commandIDs } = options.config;
  const typed = options.id.replaceAll(':', ' ');
  const near = closest(
    typed,
    commandIDs.map((c) => c.replaceAll(':', ' ')),
  );
  const hint = near ? `did you mean "${bin} ${near}"? ` : '';
  process.stderr.write(`${bin}: "${typed}" is not a ${bin} command; ${hint}\`${bin} --help\` lists them\n`);
  process.exit(EXIT_USAGE);
}
