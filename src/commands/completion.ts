import * as Args from '@oclif/core/args';
import { CcmCommandCore } from '../cli/base-command.js';

/** `ccm completion bash|zsh|fish`, as `kubectl completion`: the script on stdout (src/cli/completion). */
export default class Completion extends CcmCommandCore {
  static override summary = 'Print a shell completion script for bash, zsh or fish';
  static override description = [
    "The script completes ccm's commands, their flags, and the values of --provider, -o and the other flags that take one of a fixed set. It holds all of them: a TAB starts no program, so completing reaches no network, cloud or API server.",
    'bash: `source <(ccm completion bash)`, in ~/.bashrc for every new shell. zsh: `source <(ccm completion zsh)` in ~/.zshrc, after `autoload -Uz compinit && compinit`. fish: `ccm completion fish | source`, in ~/.config/fish/config.fish. Loaded so, each new shell prints the script of the ccm it finds, upgraded or not.',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> completion bash',
    'source <(<%= config.bin %> completion bash)',
    'source <(<%= config.bin %> completion zsh)',
    '<%= config.bin %> completion fish | source',
  ];
  // Nothing of a cluster or a cloud (CcmCommandCore): no kubeconfig, provider or output flags.
  static override args = {
    shell: Args.string({ description: 'bash, zsh or fish' }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(Completion);
    const { completionScript } = await import('../cli/completion/script.js');
    process.stdout.write(completionScript(this.config, args.shell));
  }
}
