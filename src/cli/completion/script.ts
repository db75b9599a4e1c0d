import type { Config } from '@oclif/core/config';
import { UsageError } from '../errors.js';
import { bashScript } from './bash.js';
import { fishScript } from './fish.js';
import { completionSpec, SHELLS, type Shell } from './spec.js';
import { zshScript } from './zsh.js';

const SHELL_LIST = `${SHELLS.slice(0, -1).join(', ')} or ${SHELLS.at(-1)}`;

/** The shell named on the command line, or the usage error (exit 2) that says which ones there are. */
export function chosenShell(name: string | undefined): Shell {
  if (name === undefined || name === '') throw new UsageError(`completion needs a shell: ${SHELL_LIST}`);
  const shell = SHELLS.find((s) => s === name.toLowerCase());
  if (!shell)
    throw new UsageError(`no completion for ${JSON.stringify(name)}; completion takes ${SHELL_LIST}`);
  return shell;
}

/** `ccm completion SHELL`'s script, made from the commands oclif knows. */
export function completionScript(config: Config, name: string | undefined): string {
  const shell = chosenShell(name);
  const spec = completionSpec(config);
  switch (shell) {
    case 'bash':
      return bashScript(spec, config.version);
    case 'zsh':
      return zshScript(spec, config.version);
    case 'fish':
      return fishScript(spec, config.version);
  }
}
