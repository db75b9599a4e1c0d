import type { Config } from '@oclif/core/config';
import { CommandHelp, Help } from '@oclif/core/help';

// oclif renders every help string as an ejs template, compiling each one: 5–10 ms of a --help.
// The one tag ccm's strings use, `<%= config.bin %>`, is put in directly; only a string with any
// other tag is left to ejs, the rest are printed as they are.
const BIN_TAG = /<%= config\.bin %>/g;
const onlyTemplates =
  (render: (input: string) => string, bin: string) =>
  (input: string): string => {
    const text = input.replace(BIN_TAG, bin);
    return text.includes('<%') ? render(text) : text;
  };

class CcmCommandHelp extends CommandHelp {
  constructor(...args: ConstructorParameters<typeof CommandHelp>) {
    super(...args);
    this.render = onlyTemplates(this.render, this.config.bin);
  }
}

/** oclif's Help (package.json `oclif.helpClass`), rendering only the strings that are templates. */
export class CcmHelp extends Help {
  protected override CommandHelpClass = CcmCommandHelp;

  constructor(config: Config, options?: ConstructorParameters<typeof Help>[1]) {
    super(config, options);
    this.render = onlyTemplates(this.render, config.bin);
  }
}
