/**
 * What `ccm completion` completes (src/cli/completion/spec.ts) is what the commands take: every command
 * and flag oclif knows but the hidden ones, and for each flag with a fixed set, values its own parser
 * accepts (a value the script offers must never be refused when the line runs).
 */
import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core/config';
import { parse } from '@oclif/core/parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { bashScript } from '../../../src/cli/completion/bash.js';
import { fishScript } from '../../../src/cli/completion/fish.js';
import { chosenShell } from '../../../src/cli/completion/script.js';
import {
  type CompletionSpec,
  completionSpec,
  SHELLS,
  shortDescription,
} from '../../../src/cli/completion/spec.js';
import { zshScript } from '../../../src/cli/completion/zsh.js';
import { COMMANDS } from '../../../src/cli/entry.js';
import { selectControllers } from '../../../src/controllers/manager.js';
import { providerNames } from '../../../src/providers/registry.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
let config: Config;
let spec: CompletionSpec;

beforeAll(async () => {
  config = await Config.load({ root, userPlugins: false, devPlugins: false });
  spec = completionSpec(config);
});

const byId = (id: string) => spec.commands.find((c) => c.words.join(' ') === id);

describe('the completion spec', () => {
  it('has every command but the hidden ones, and the topics that lead to them, with their summaries', () => {
    const visible = config.commands.filter((c) => !c.hidden).map((c) => c.id.replaceAll(':', ' '));
    expect(spec.commands.map((c) => c.words.join(' ')).sort()).toEqual(visible.sort());
    expect(visible).toContain('completion');
    expect(spec.topics.map((t) => t.words.join(' '))).toEqual(['cluster', 'nodes', 'secret']);
    expect(spec.topics.find((t) => t.words[0] === 'nodes')?.summary).toBe(
      'Initialise and reconcile Kubernetes Nodes against the cloud',
    );
    expect(byId('nodes init')?.summary).toMatch(/^Initialise and reconcile every Node/);
  });

  it("has each command's flags but the hidden ones, with -h/--help, each spelling once", () => {
    for (const command of config.commands.filter((c) => !c.hidden)) {
      const got = byId(command.id.replaceAll(':', ' '));
      const visible = Object.values(command.flags).filter((f) => !f.hidden);
      expect(got?.flags.map((f) => f.long).sort(), command.id).toEqual(
        [...visible.map((f) => `--${f.name}`), '--help'].sort(),
      );
      const spellings = got?.flags.flatMap((f) => [f.long, f.short, f.negation].filter(Boolean)) ?? [];
      expect(new Set(spellings).size, command.id).toBe(spellings.length);
    }
    const prepare = byId('cluster prepare')?.flags.map((f) => f.long) ?? [];
    expect(prepare).not.toContain('--root');
    expect(prepare).not.toContain('--remote-root');
    expect(byId('nodes list')?.flags.find((f) => f.long === '--output')).toMatchObject({
      short: '-o',
      takesValue: true,
    });
    expect(byId('run')?.flags.find((f) => f.long === '--leader-elect')).toMatchObject({
      negation: '--no-leader-elect',
      takesValue: false,
    });
    expect(byId('secret create')?.flags.find((f) => f.long === '--set')?.multiple).toBe(true);
  });

  it('offers for each flag with a fixed set only values its command parses', async () => {
    let checked = 0;
    for (const command of spec.commands) {
      const id = command.words.join(':') as keyof typeof COMMANDS;
      const Cmd = COMMANDS[id];
      const flags = { ...Cmd.baseFlags, ...Cmd.flags };
      for (const flag of command.flags) {
        if (!flag.values) continue;
        const items = flag.values.list
          ? [flag.values.items.join(','), ...flag.values.items]
          : flag.values.items;
        for (const item of items) {
          // A template's text follows its `=`: a template of each kind.
          const value =
            item === 'jsonpath='
              ? 'jsonpath={.version}'
              : item === 'custom-columns='
                ? 'custom-columns=V:.version'
                : item;
          // With the flags it needs (--cmon-format: --cmon).
          const needs =
            (flags[flag.long.slice(2) as keyof typeof flags] as { dependsOn?: string[] }).dependsOn ?? [];
          const parsed = await parse([...needs.map((n) => `--${n}`), flag.long, value], {
            flags,
            strict: false,
          });
          expect(Object.values(parsed.flags), `${id} ${flag.long} ${value}`).toContain(value);
          if (flag.long === '--controllers') expect(() => selectControllers(value)).not.toThrow();
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('--provider: every provider; -o: the formats and templates; --controllers: a list of all; oclif options as they are', () => {
    const values = (id: string, flag: string) => byId(id)?.flags.find((f) => f.long === flag)?.values;
    expect(values('nodes init', '--provider')).toEqual({ items: [...providerNames], list: false });
    expect(values('version', '--output')?.items).toEqual([
      'table',
      'wide',
      'json',
      'yaml',
      'name',
      'jsonpath=',
      'custom-columns=',
    ]);
    expect(values('run', '--controllers')).toEqual({
      items: ['*', 'cloud-node', 'cloud-node-lifecycle', 'service', 'route'],
      list: true,
    });
    expect(values('manifests', '--image-pull-policy')?.items).toEqual(['IfNotPresent', 'Always', 'Never']);
    expect(values('run', '--log-level')?.items).toEqual(['error', 'warn', 'info', 'debug']);
    expect(values('nodes init', '--kubeconfig')).toBeUndefined();
    expect(byId('completion')?.args).toEqual([...SHELLS]);
    expect(byId('help')?.args).toBe('commands');
  });

  it('shortens a help text to its first clause, at most 60 characters', () => {
    expect(shortDescription('Path of the kubeconfig file (default: $KUBECONFIG)', 'ccm')).toBe(
      'Path of the kubeconfig file',
    );
    expect(shortDescription('Print only failures; the exit status stays', 'ccm')).toBe('Print only failures');
    expect(shortDescription('Display help for <%= config.bin %>', 'ccm')).toBe('Display help for ccm');
    const long = shortDescription(
      'How long one request to the API server may take, as kubectl flag does it',
      'ccm',
    );
    expect(long.length).toBeLessThanOrEqual(60);
    expect(long).toMatch(/^How long one request to the API server may take, as…$/);
    expect(shortDescription(undefined, 'ccm')).toBe('');
  });
});

describe('the scripts', () => {
  it('name ccm, its version and how to load them; each registers its completion', () => {
    const bash = bashScript(spec, '9.9.9');
    expect(bash).toMatch(/^# bash completion for ccm 9\.9\.9, printed by `ccm completion bash`/);
    expect(bash).toContain('source <(ccm completion bash)');
    expect(bash.trimEnd().split('\n').at(-1)).toBe('complete -F _ccm ccm');
    const zsh = zshScript(spec, '9.9.9');
    expect(zsh.split('\n').slice(0, 2)).toEqual([
      '#compdef ccm',
      '# zsh completion for ccm 9.9.9, printed by `ccm completion zsh`.',
    ]);
    expect(zsh).toContain('compdef _ccm ccm');
    const fish = fishScript(spec, '9.9.9');
    expect(fish).toMatch(/^# fish completion for ccm 9\.9\.9/);
    expect(fish).toContain("complete -c ccm -n 'not __ccm_wants_files' -f -a '(__ccm_complete)'");
  });

  it('the shell: bash, zsh or fish in any case; else a usage error that names them', () => {
    expect(chosenShell('ZSH')).toBe('zsh');
    expect(() => chosenShell('powershell')).toThrow(
      'no completion for "powershell"; completion takes bash, zsh or fish',
    );
    expect(() => chosenShell(undefined)).toThrow('completion needs a shell: bash, zsh or fish');
  });
});
