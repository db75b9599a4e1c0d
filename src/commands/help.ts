import * as Args from '@oclif/core/args';
import { Command } from '@oclif/core/command';
import * as Flags from '@oclif/core/flags';
import { loadHelpClass } from '@oclif/core/help';

/** `ccm help [COMMAND]`: the same help as `--help`, with oclif's own Help class. */
export default class Help extends Command {
  static override summary = 'Display help for <%= config.bin %>';
  static override args = {
    command: Args.string({ description: 'Command to show help for', required: false }),
  };
  static override flags = {
    'nested-commands': Flags.boolean({ char: 'n', description: 'Include all nested commands in the output' }),
  };
  static override strict = false;

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Help);
    const HelpClass = await loadHelpClass(this.config);
    await new HelpClass(this.config, { all: flags['nested-commands'] }).showHelp(argv as string[]);
  }
}
