/**
 * `ccm completion bash|zsh|fish` in the real shells (Debian's bash, zsh and fish; test/setup.sh
 * installs zsh and fish when missing):
 * - bash: the script sourced as the docs say, `complete -p ccm`, then bash's completion function
 *   called as readline calls it (COMP_WORDS split at blanks and at `=`, COMP_CWORD, COMP_LINE), and in
 *   an interactive bash in a terminal (tmux), TAB typed;
 * - zsh: an interactive zsh in a terminal, compinit loaded, TAB typed; every match compsys is given is
 *   recorded by a compadd wrapper (the `-O` array compadd itself fills);
 * - fish: `complete -C LINE`, fish's own completion of a command line, and TAB in a terminal.
 * Each shell answers the same table of lines. Once the script is loaded PATH is emptied: no program can
 * start, so a completion that ran ccm, Node or anything that reaches a network would fail. The time
 * each completion takes is measured (docs/deploy.md, "Shell completion and version").
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { FORMATS } from '../../src/cli/output/flags.js';
import { controllerNames } from '../../src/controllers/manager.js';
import { providerNames } from '../../src/providers/registry.js';
import { ccm } from '../helpers/cli.js';
import { Terminal } from '../helpers/terminal.js';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** `ccm` (bin/ccm) and this Node first on PATH, as for a reader who installed ccm. */
const PATH = [join(root, 'bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(':');
const fixtures = join(root, 'test/fixtures/completion');
const SHELLS = { bash: '/usr/bin/bash', zsh: '/usr/bin/zsh', fish: '/usr/bin/fish' };

const providers = [...providerNames];
const controllers = controllerNames();
const commands = [
  'cluster',
  'completion',
  'doctor',
  'help',
  'manifests',
  'migrate',
  'nodes',
  'run',
  'secret',
  'version',
];

/**
 * Lines, the cursor at their end, and what the word under it can become: each candidate whole, as
 * the line would show it (`--provider=openstack`), in no order. `files`: the shell's own file names.
 */
const CASES: [line: string, expected: string[] | 'files'][] = [
  ['ccm ', commands],
  ['ccm n', ['nodes']],
  ['ccm nodes ', ['init', 'list']],
  ['ccm secret ', ['create']],
  ['ccm cluster p', ['prepare']],
  ['ccm help nodes ', ['init', 'list']],
  ['ccm completion ', ['bash', 'zsh', 'fish']],
  // After a command and its arguments, a TAB lists its flags.
  ['ccm completion bash ', ['-h', '--help']],
  ['ccm help nodes init ', ['-n', '--nested-commands', '-h', '--help']],
  ['ccm -', ['-h', '--help', '--version']],
  ['ccm bogus ', []],
  ['ccm nodes init --prov', ['--provider']],
  ['ccm nodes init --dry', ['--dry-run']],
  ['ccm nodes init --provider ', providers],
  ['ccm nodes init --provider d', providers.filter((p) => p.startsWith('d'))],
  ['ccm secret create --provider=o', ['--provider=openstack']],
  ['ccm nodes list -o ', [...FORMATS, 'jsonpath=', 'custom-columns=']],
  ['ccm nodes list --output=js', ['--output=json', '--output=jsonpath=']],
  ['ccm version -o n', ['name']],
  ['ccm run --log-level ', ['error', 'warn', 'info', 'debug']],
  ['ccm manifests --image-pull-policy ', ['IfNotPresent', 'Always', 'Never']],
  ['ccm manifests --cmon-format ', ['job', 'additional-scrape-configs']],
  ['ccm run --controllers ', ['*', ...controllers]],
  [
    'ccm run --controllers cloud-node,',
    ['*', ...controllers.filter((c) => c !== 'cloud-node')].map((c) => `cloud-node,${c}`),
  ],
  ['ccm doctor --controllers -', controllers.map((c) => `-${c}`)],
  ['ccm manifests --controllers=service,r', ['--controllers=service,route']],
  // Hidden flags (--root, --remote-root) are not offered.
  ['ccm cluster prepare --ro', ['--rollback']],
  ['ccm cluster prepare --ssh-f', ['--ssh-from-nodes']],
  // A flag given is not offered again (-o is --output), unless it may be repeated (--set).
  ['ccm nodes list -o json --o', []],
  ['ccm run --leader-elect --no-leader', []],
  ['ccm secret create --set a=b --se', ['--set']],
  ['ccm nodes init --kubeconfig ', 'files'],
  ['ccm nodes init --cloud-config=', 'files'],
];

/** The files of the folder the shells complete in, for the `files` lines. */
const FILES = ['kube.conf', 'cloud.conf'];
let work: string;

beforeAll(() => {
  work = tempDir('ccm-completion-');
  for (const f of FILES) writeFileSync(join(work, f), '');
  for (const shell of Object.values(SHELLS))
    expect(
      () => readFileSync(shell),
      `${shell}: missing; test/setup.sh installs it (Debian's ${shell.split('/').pop()})`,
    ).not.toThrow();
});

const sorted = (a: string[]) => [...a].sort();
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? Number.NaN;
/** The time each completion took, by shell (ms), for the summary at the end. */
const timings: Record<string, number[]> = {};

describe('ccm completion', () => {
  it.each(Object.keys(SHELLS))('%s: prints a script that its shell reads without error', async (shell) => {
    const run = await ccm(['completion', shell]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(
      new RegExp(
        `^(#compdef ccm\\n)?# ${shell} completion for ccm \\d+\\.\\d+\\.\\d+, printed by \`ccm completion ${shell}\``,
      ),
    );
    const script = join(tempDir('ccm-completion-script-'), `ccm.${shell}`);
    writeFileSync(script, run.stdout);
    // -n: read, not run.
    const check = await execa(SHELLS[shell as keyof typeof SHELLS], ['-n', script], { reject: false });
    expect(check.exitCode, check.stderr).toBe(0);
  });

  it('an unknown shell, none or two: one line, exit 2', async () => {
    for (const [args, line] of [
      [['completion', 'tcsh'], 'ccm: no completion for "tcsh"; completion takes bash, zsh or fish'],
      [['completion'], 'ccm: completion needs a shell: bash, zsh or fish'],
      [
        ['completion', 'bash', 'zsh'],
        'ccm: unexpected argument "zsh"; `ccm completion --help` shows what it takes',
      ],
      [
        ['completion', 'bash', '--provider', 'x'],
        'ccm: unknown flag --provider; `ccm completion --help` lists the flags',
      ],
    ] as const) {
      const run = await ccm([...args]);
      expect(run.exitCode, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(line);
    }
    // The shell's name in any case, as --provider's.
    expect((await ccm(['completion', 'Bash'])).stdout).toMatch(/^# bash completion/);
  });
});

describe('bash', () => {
  /**
   * One bash (test/fixtures/completion/complete-lines.bash): the docs' line loads the script, `complete
   * -p ccm` says what it registered, then each line is completed as readline would, PATH empty.
   */
  async function bashAnswers(
    lines: string[],
    env: Record<string, string> = {},
  ): Promise<{ registered: string; answers: string[][] }> {
    const harness = join(fixtures, 'complete-lines.bash');
    const run = await execa('bash', ['--norc', '--noprofile', harness, ...lines], {
      cwd: work,
      env: { PATH, HOME: work, ...env },
      extendEnv: false,
    });
    expect(run.stderr).toBe('');
    const [registered = '', ...rest] = run.stdout.split('\n');
    return { registered, answers: rest.map((l) => l.split('\x1f').slice(0, -1)) };
  }

  it('complete -p ccm names its function; each line completes as the table says, with no program on PATH', async () => {
    const { registered, answers } = await bashAnswers(CASES.map(([l]) => l));
    expect(registered).toBe('complete -F _ccm ccm');
    timings.bash = [];
    CASES.forEach(([line, expected], i) => {
      const [kept = '', opts = '', micros = '', ...reply] = answers[i] ?? [];
      timings.bash?.push(Number(micros) / 1000);
      if (expected === 'files') {
        // Nothing of ccm's: bash's own file names (-o default), in the word after any `=`.
        expect(reply, line).toEqual([]);
        expect(opts.trim(), line).toBe('-o default');
      } else {
        // `*` is escaped for the line (--controllers \*), and is `*` once the shell reads it.
        expect(sorted(reply.map((r) => kept + r.replaceAll('\\*', '*'))), line).toEqual(sorted(expected));
      }
    });
  });

  it('--flag=value also where = is no word break (COMP_WORDBREAKS changed)', async () => {
    const { answers } = await bashAnswers(
      ['ccm nodes init --provider=o', 'ccm run --controllers=cloud-node,r'],
      {
        KEEP_EQUALS: '1',
      },
    );
    expect(answers.map(([kept, , , ...reply]) => [kept, ...reply])).toEqual([
      ['', '--provider=openstack'],
      ['', '--controllers=cloud-node,route'],
    ]);
  });

  /** Lines of bash only (bash splits `-o=` at its =; zsh and fish have their own `=` handling). */
  const BASH_CASES: [line: string, expected: string[]][] = [
    // After --, or after a command's argument, nothing is offered, and nothing fails.
    ['ccm -- ', []],
    ['ccm manifests -- ', []],
    ['ccm completion bash -- ', []],
    // -o=value is taken as -o value is: the short flag with = completes its values.
    ['ccm nodes list -o=js', ['-o=json', '-o=jsonpath=']],
    ['ccm version -o=n', ['-o=name']],
  ];

  it('-o=value completes its values; after -- nothing', async () => {
    const { answers } = await bashAnswers(BASH_CASES.map(([l]) => l));
    BASH_CASES.forEach(([line, expected], i) => {
      const [kept = '', , , ...reply] = answers[i] ?? [];
      expect(sorted(reply.map((r) => kept + r)), line).toEqual(sorted(expected));
    });
  });

  it('under set -euo pipefail, every line completes as without (a failed test in _ccm would end a set -e shell)', async () => {
    const lines = [...CASES.map(([l]) => l), ...BASH_CASES.map(([l]) => l)];
    const plain = await bashAnswers(lines);
    const strict = await bashAnswers(lines, { STRICT: '1' });
    expect(strict.answers).toHaveLength(lines.length);
    const noTimes = (a: string[][]) => a.map(([kept, opts, , ...reply]) => [kept, opts, ...reply]);
    expect(noTimes(strict.answers)).toEqual(noTimes(plain.answers));
  });

  it('escapes *, and puts no space after jsonpath= (its template follows)', async () => {
    const { answers } = await bashAnswers(['ccm run --controllers ', 'ccm nodes list -o jsonp']);
    expect(answers[0]).toContain('\\*');
    expect(answers[1]?.slice(1, 2)).toEqual([' -o nospace']);
  });

  it('in an interactive bash: TAB completes a topic, a flag, --flag=value, a list item and a file name', async () => {
    const terminal = await shellTerminal(['bash', '--norc', '--noprofile', '-i']);
    try {
      await terminal.type('source <(ccm completion bash); PATH=', 'Enter');
      await terminal.waitFor('ready> ', undefined, 2);
      // One line, each completion followed by what comes next: the space after it shows.
      await tabTo(terminal, 'ccm nodes i', 'ccm nodes init');
      await tabTo(terminal, '--provider=o', 'ccm nodes init --provider=openstack');
      await tabTo(terminal, '-o jsonp', 'openstack -o jsonpath=');
      await tabTo(terminal, 'X --kubeconfig ku', '-o jsonpath=X --kubeconfig kube.conf');
      await terminal.type('Y');
      await terminal.waitFor('--kubeconfig kube.conf Y');
      await terminal.type('C-u');
      await tabTo(terminal, 'ccm run --controllers cloud-node,r', 'ccm run --controllers cloud-node,route');
      await terminal.type('Y');
      await terminal.waitFor('cloud-node,route Y');
    } finally {
      await terminal.close();
    }
  });

  it('in an interactive bash with set -e: TAB after a command and its argument, after --, and on -o= leaves the shell running', async () => {
    const terminal = await shellTerminal(['bash', '--norc', '--noprofile', '-i']);
    try {
      await terminal.type(
        'source <(ccm completion bash); PATH=; set -eu -o pipefail; echo "errexit=$-"',
        'Enter',
      );
      await terminal.waitFor('\nerrexit=');
      for (const [i, line] of ['ccm completion bash ', 'ccm -- ', 'ccm manifests -- '].entries()) {
        await terminal.type(line, 'Tab', 'Tab');
        await terminal.type('C-u', `echo alive-${i}`, 'Enter');
        await terminal.waitFor(`\nalive-${i}`);
      }
      await tabTo(terminal, 'ccm nodes list -o=jsonp', 'ccm nodes list -o=jsonpath=');
      await terminal.type('C-u', 'echo "still $-"', 'Enter');
      await terminal.waitFor('\nstill ');
    } finally {
      await terminal.close();
    }
  });
});

describe('zsh', () => {
  it("after compinit, source <(ccm completion zsh); TAB on each line gives compsys the table's matches, with no program on PATH", async () => {
    const dir = tempDir('ccm-zsh-');
    const capture = join(dir, 'capture');
    const terminal = await shellTerminal(['zsh', '-f', '-i'], { CAPTURE: capture, ZDOTDIR: dir });
    try {
      await terminal.type(
        `autoload -Uz compinit && compinit -u -d ${dir}/zcompdump; source <(ccm completion zsh); source ${join(fixtures, 'capture.zsh')}; path=()`,
        'Enter',
      );
      await terminal.waitFor('ready> ', undefined, 2);
      timings.zsh = [];
      for (const [line, expected] of CASES) {
        writeFileSync(capture, '');
        await terminal.type(line, 'Tab');
        const answer = await nextCapture(capture);
        await terminal.type('C-u');
        timings.zsh.push(answer.ms);
        if (expected === 'files') {
          // _files' matches in the folder (after --cloud-config= too), of all it offers.
          const names = answer.matches.map((m) => m.replace(/^--[^=]*=/, ''));
          expect(names.filter((m) => FILES.includes(m)).sort(), line).toEqual(sorted(FILES));
        } else expect(sorted(answer.matches), line).toEqual(sorted(expected));
      }
      // What the line became (lines of no case above): a single match inserted with a space after it,
      // -o's template without one.
      await tabTo(terminal, 'ccm migrate --provider=d', 'ccm migrate --provider=digitalocean');
      await tabTo(terminal, '-o jsonp', 'ccm migrate --provider=digitalocean -o jsonpath=');
      await terminal.type('X');
      await terminal.waitFor('-o jsonpath=X');
    } finally {
      await terminal.close();
    }
  });

  it('saved as _ccm in a folder of $fpath, compinit finds it and the first TAB completes', async () => {
    const dir = tempDir('ccm-zsh-fpath-');
    const functions = join(dir, 'functions');
    mkdirSync(functions);
    writeFileSync(join(functions, '_ccm'), (await ccm(['completion', 'zsh'])).stdout);
    const terminal = await shellTerminal(['zsh', '-f', '-i'], { ZDOTDIR: dir });
    try {
      await terminal.type(
        `fpath=(${functions} $fpath); autoload -Uz compinit && compinit -u -d ${dir}/zcompdump; path=()`,
        'Enter',
      );
      await terminal.waitFor('ready> ', undefined, 2);
      await tabTo(terminal, 'ccm nodes i', 'ccm nodes init');
      await tabTo(terminal, '--provider=d', 'ccm nodes init --provider=digitalocean');
    } finally {
      await terminal.close();
    }
  });

  it('sourced before compinit: one line that says to load it, status 1', async () => {
    const run = await execa('zsh', ['-f', '-c', 'source <(ccm completion zsh)'], {
      env: { PATH, HOME: work },
      extendEnv: false,
      reject: false,
    });
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toBe(
      "ccm completion: zsh's completion system is not loaded; run 'autoload -Uz compinit && compinit' first",
    );
  });

  /** The answer _ccm_test recorded (the file emptied before the TAB). */
  async function nextCapture(file: string): Promise<{ matches: string[]; ms: number }> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const blocks = (() => {
        try {
          return readFileSync(file, 'utf8').split('END\n');
        } catch {
          return [];
        }
      })();
      const block = blocks.length > 1 ? blocks[0] : undefined;
      if (block !== undefined) {
        const lines = block.split('\n').filter((l) => l !== '');
        const ms = Number(lines.at(-1)?.replace(/^TIME /, ''));
        return { matches: lines.slice(0, -1), ms };
      }
      if (Date.now() > deadline) throw new Error(`zsh recorded no completion: ${blocks.join('END\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});

describe('fish', () => {
  it('ccm completion fish | source; complete -C on each line gives the table, with no program on PATH', async () => {
    const quoteFish = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
    const script = [
      'ccm completion fish | source',
      // Timed with PATH as it is (date is a program): 20 rounds of the table.
      'set -l t0 (date +%s%N)',
      `for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; for line in ${CASES.map(([l]) => quoteFish(l)).join(' ')}; complete -C"$line" >/dev/null; end; end`,
      'set -l t1 (date +%s%N)',
      'echo "TIME $t0 $t1"',
      'set -gx PATH',
      ...CASES.map(([l]) => `echo '::case'; complete -C${quoteFish(l)}`),
    ].join('\n');
    const run = await execa('fish', ['--no-config', '-c', script], {
      cwd: work,
      env: { PATH, HOME: work, XDG_CONFIG_HOME: join(work, '.config'), XDG_DATA_HOME: join(work, '.local') },
      extendEnv: false,
    });
    expect(run.stderr).toBe('');
    const [head = '', ...blocks] = run.stdout.split('::case\n');
    const [, t0, t1] = head.trim().split(' ');
    timings.fish = [(Number(t1) - Number(t0)) / 1e6 / 20 / CASES.length];
    CASES.forEach(([line, expected], i) => {
      const typed = line.slice(line.lastIndexOf(' ') + 1);
      // fish shows matches of the word's start, and only when there are none, others that merely
      // contain its letters: these are the first.
      const shown = (blocks[i] ?? '')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.split('\t')[0] as string)
        .filter((c) => c.startsWith(typed));
      if (expected === 'files') {
        const value = typed.replace(/^--[^=]*=/, '');
        expect(
          shown
            .map((c) => c.slice(typed.length - value.length))
            .filter((f) => FILES.includes(f))
            .sort(),
          line,
        ).toEqual(sorted(FILES));
      } else {
        expect(sorted(shown), line).toEqual(sorted(expected));
      }
    });
  });

  it('in an interactive fish: TAB completes a topic, --flag=value and a list item', async () => {
    const dir = tempDir('ccm-fish-');
    const terminal = await shellTerminal(
      ['fish', '--no-config', '-i'],
      {
        XDG_CONFIG_HOME: join(dir, 'config'),
        XDG_DATA_HOME: join(dir, 'data'),
      },
      null,
    );
    try {
      await terminal.type(
        'function fish_prompt; echo "ready> "; end; ccm completion fish | source; set -gx PATH',
        'Enter',
      );
      await terminal.waitFor('ready> ', undefined, 2);
      await tabTo(terminal, 'ccm nodes i', 'ccm nodes init');
      await tabTo(terminal, '--provider=o', 'ccm nodes init --provider=openstack');
      await terminal.type('C-u');
      await tabTo(terminal, 'ccm run --controllers cloud-node,r', 'ccm run --controllers cloud-node,route');
      await terminal.type('Y');
      await terminal.waitFor('cloud-node,route Y');
    } finally {
      await terminal.close();
    }
  });
});

// Last, after the shells above (a file's tests run in order): how long a completion took in each.
it('a completion takes a few milliseconds in each shell (no program started)', () => {
  expect(Object.keys(timings).sort()).toEqual(['bash', 'fish', 'zsh']);
  const summary = Object.entries(timings)
    .map(
      ([shell, ms]) =>
        `${shell} ${median(ms).toFixed(2)} ms (median of ${ms.length}, max ${Math.max(...ms).toFixed(2)})`,
    )
    .join('; ');
  // The figures of docs/deploy.md, "Shell completion and version".
  console.log(`time per completion: ${summary}`);
  // Generous for a loaded machine: a Node start alone (what a `ccm __complete` per TAB would cost) is more.
  for (const ms of Object.values(timings)) expect(median(ms)).toBeLessThan(50);
});

/**
 * An interactive shell in a terminal of its own, ccm on PATH, in the folder with FILES; `ready> `
 * its prompt (PS1), waited for unless `ready` is null (fish, whose prompt is a function).
 */
async function shellTerminal(
  program: string[],
  env: Record<string, string> = {},
  ready: string | null = 'ready> ',
): Promise<Terminal> {
  const terminal = await Terminal.open([], {
    width: 200,
    height: 50,
    program: [
      'env',
      '-i',
      `PATH=${PATH}`,
      `HOME=${work}`,
      'TERM=xterm-256color',
      'PS1=ready> ',
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      'sh',
      '-c',
      `cd '${work}' && exec "$@"`,
      'sh',
      ...program,
    ],
  });
  if (ready) await terminal.waitFor(ready);
  return terminal;
}

/** Types `text` and TAB, and waits for the line to read `expected` (with the prompt before it). */
async function tabTo(terminal: Terminal, text: string, expected: string): Promise<void> {
  await terminal.type(text, 'Tab');
  await terminal.waitFor(expected, 30_000);
}
