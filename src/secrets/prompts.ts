import { homedir } from 'node:os';
import { styleText } from 'node:util';
import { editor, input, password, select } from '@inquirer/prompts';
import { widthOf, wrapWords } from '../cli/output/text.js';
import { InvalidConfigError } from '../providers/errors.js';
import { loadProvider, providerNames } from '../providers/registry.js';
import type {
  CredentialField,
  DocumentBuilder,
  DocumentQuestion,
  ProviderDefinition,
} from '../providers/types.js';
import { checkPassphrase, findSshKeys, isEncryptedKey, isPrivateKey } from './ssh-keys.js';
import { isFilePath, type Resolved, readValueFile } from './values.js';

/**
 * The interactive half: asks, in schema order (a field computed from another right after it), for
 * what nothing else gave. Secret answers are not echoed; each answer is checked as it is typed
 * (required, a readable file, a passphrase that opens the key), and the schema's default is shown.
 */

/**
 * A question once answered, as it stays on the screen above the next: its words without the
 * examples and hints that helped to answer it ("Region slug (e.g. nyc3) of …; default: …" reads
 * "Region slug of …"). A short parenthesis without a space, such as an INI key "(auth-url)", stays.
 */
export function answeredLabel(message: string): string {
  const label = message
    .replace(/\s*\([^()]*\s[^()]*\)/g, '')
    .split(/;|,\s|\se\.g\./)[0]
    ?.trim();
  return label || message;
}

/** The terminal's width, as inquirer measures it (80 when it cannot tell). */
function columns(): number {
  return process.stdout.columns || 80;
}

/** Cells inquirer writes before a question ("? ", "✔ ", "❯ "), under which its other lines are indented. */
const PREFIX = 2;
const INDENT = ' '.repeat(PREFIX);

/**
 * Text for a prompt in lines that fit the terminal. inquirer (@inquirer/core's breakLines, with
 * wordWrap false) breaks a line too long for the terminal where the width ends, in the middle of a
 * word, so the text reaches it already broken between words: the first line after inquirer's
 * prefix, the others indented under it, and `reserve` cells left on the last for what inquirer
 * writes after it (a default, "not shown as typed", the first characters typed, a disabled label).
 * The last column stays free: a line that fills it is one the terminal or inquirer broke.
 */
export function fitted(text: string, width: number, reserve = 0): string {
  const room = Math.max(20, width - PREFIX - 1);
  const lines = wrapWords(text, room);
  const last = lines.pop() ?? '';
  if (reserve > 0 && widthOf(last) + 1 + reserve > room)
    lines.push(...wrapWords(last, Math.max(10, room - reserve - 1)));
  else lines.push(last);
  return lines.join(`\n${INDENT}`);
}

/**
 * A prompt's theme: the whole question while it is asked, its short label once answered, each
 * broken between words to the terminal's width (`reserve`: see fitted()); errors likewise.
 */
function themeFor(reserve = 0) {
  return {
    style: {
      message: (text: string, status: string) =>
        fitted(status === 'done' ? answeredLabel(text) : text, columns(), status === 'done' ? 0 : reserve)
          .split('\n')
          .map((line) => styleText('bold', line))
          .join('\n'),
      error: (text: string) =>
        styleText('red', `> ${wrapWords(text, columns() - PREFIX - 1).join(`\n${INDENT}`)}`),
    },
  };
}

const theme = themeFor();

/** Room on an input's line for its default, shown as "(default)", and the first characters typed. */
const inputReserve = (fallback?: string) => (fallback ? widthOf(fallback) + 3 : 0) + 16;

/** What a secret's line shows while it is typed, instead of the text. */
const NOT_SHOWN = 'not shown as typed';

/**
 * A secret typed as ssh and sudo ask for one: nothing of it on the screen, neither while it is
 * typed nor once answered, not even a mask character per key (which gives away its length), and
 * no key that reveals it.
 */
function secretInput(message: string, validate?: (value: string) => true | string) {
  const masked = themeFor(NOT_SHOWN.length + 1);
  return password({
    message,
    toggleMask: false,
    ...(validate ? { validate } : {}),
    theme: { ...masked, style: { ...masked.style, maskedText: NOT_SHOWN } },
  });
}

/** An optional input left empty says so once answered, rather than showing nothing. */
const skippedWhenEmpty = (value: string, { isFinal }: { isFinal: boolean }) =>
  isFinal ? (value.trim() ? styleText('cyan', value) : styleText('dim', 'skipped')) : value;

/** The providers whose credentials a Secret can hold (Cloudlycke keeps none, so it is not offered). */
export async function promptProvider(): Promise<string> {
  const offered = await Promise.all(
    providerNames.map(async (name) =>
      (await loadProvider(name)).credentials.fields.some((f) => f.secretKey) ? [name] : [],
    ),
  );
  return select({
    message: 'Cloud provider',
    choices: offered.flat().map((name) => ({ name, value: name })),
    theme,
  });
}

/** A field the prompts leave to the key chooser (the passphrase of the SSH key it picks). */
export function passphraseField(definition: ProviderDefinition): CredentialField | undefined {
  const hasKey = definition.credentials.fields.some((f) => f.prompt === 'ssh-key');
  return hasKey
    ? definition.credentials.fields.find(
        (f) => f.prompt === 'password' && !f.required && /passphrase/i.test(f.key),
      )
    : undefined;
}

export interface PromptOptions {
  sshDir?: string;
  agentSocket?: string;
  /** Ask only these fields (asked again after the cloud refused them). */
  only?: ReadonlySet<string>;
  /** Earlier answers, offered as the default of a field that is not secret. */
  previous?: ReadonlyMap<string, string>;
  /** The Secret being written (namespace/name), which a question about its content names. */
  secret?: string;
}

/**
 * The fields in the order they are asked: the schema's, except that a field computed from another
 * (Triton's fingerprint, from the key) comes right after it, since its question depends on it.
 */
function askingOrder(fields: readonly CredentialField[]): CredentialField[] {
  const after = (f: CredentialField) =>
    f.computedFrom !== undefined && fields.some((g) => g.key === f.computedFrom);
  return fields
    .filter((f) => !after(f))
    .flatMap((f) => [f, ...fields.filter((g) => after(g) && g.computedFrom === f.key)]);
}

/** Asks for each field nothing else gave; returns the keys of the fields it asked for. */
export async function promptMissing(
  definition: ProviderDefinition,
  resolved: Resolved,
  options: PromptOptions,
): Promise<string[]> {
  const passphrase = passphraseField(definition);
  const asked: string[] = [];
  for (const field of askingOrder(definition.credentials.fields)) {
    if (resolved.has(field.key) || field === passphrase) continue;
    if (options.only && !options.only.has(field.key)) continue;
    // Only what the Secret holds is asked; the rest belongs to `ccm run`'s own flags.
    if (!field.secretKey) continue;
    if (field.asked === false) continue;
    // The document a provider takes by path (OpenStack's --cloud-config) is that file, read whole.
    if (field.prompt === 'editor' && definition.configFileField && resolved.has(definition.configFileField))
      continue;
    // Computed from a value given or chosen (the fingerprint of the key picked): nothing to ask.
    if (field.computedFrom && resolved.get(field.computedFrom)?.value) continue;
    asked.push(field.key);
    const label = `${field.description}${field.required ? '' : ' (optional, Enter to skip)'}`;
    const required = (value: string) => (field.required && !value.trim() ? `${field.key} is required` : true);
    const previous = field.secret ? undefined : options.previous?.get(field.key);
    const fallback = previous ?? field.default;
    let value: string;
    let answers: Record<string, string> | undefined;
    let path: string | undefined;
    switch (field.prompt) {
      case 'password':
        value = await secretInput(label, required);
        break;
      case 'ssh-key': {
        const picked = await promptSshKey(field, options);
        if (!picked) continue;
        resolved.set(field.key, { value: picked.key, source: 'prompt' });
        if (picked.passphrase && passphrase)
          resolved.set(passphrase.key, { value: picked.passphrase, source: 'prompt' });
        continue;
      }
      case 'editor':
        ({ document: value, answers, path } = await promptDocument(definition, field, options));
        break;
      case 'file': {
        const path = await input({
          message: `${label} — path of the file`,
          validate: (v) =>
            !v.trim() ? required(v) : isFilePath(v.trim()) ? true : `${v} is not a readable file`,
          theme: themeFor(inputReserve()),
          ...(field.required ? {} : { transformer: skippedWhenEmpty }),
        });
        value = path.trim() ? readValueFile(path.trim(), field.key) : '';
        break;
      }
      default:
        value = await input({
          message: label,
          ...(fallback ? { default: fallback } : {}),
          validate: required,
          theme: themeFor(inputReserve(fallback)),
          ...(field.required || fallback ? {} : { transformer: skippedWhenEmpty }),
        });
    }
    if (value.trim() === '') continue;
    resolved.set(field.key, {
      // A document is kept whole (a file ends with its newline), as `--from-file` keeps it.
      value: field.prompt === 'editor' ? value : value.trim(),
      source: field.default !== undefined && value.trim() === field.default ? 'default' : 'prompt',
      ...(answers ? { answers } : {}),
      ...(path ? { path } : {}),
    });
  }
  return asked;
}

/**
 * Asks again for `keys` (after the cloud refused the credentials); a field that is not secret
 * offers its earlier answer, and a key chosen again is asked its passphrase again.
 */
export async function promptAgain(
  definition: ProviderDefinition,
  resolved: Resolved,
  keys: readonly string[],
  options: PromptOptions,
): Promise<void> {
  const previous = new Map<string, string>();
  for (const key of keys) {
    const value = resolved.get(key)?.value;
    if (value !== undefined) previous.set(key, value);
    resolved.delete(key);
  }
  const passphrase = passphraseField(definition);
  const keyField = definition.credentials.fields.find((f) => f.prompt === 'ssh-key');
  if (passphrase && keyField && keys.includes(keyField.key)) resolved.delete(passphrase.key);
  await promptMissing(definition, resolved, { ...options, only: new Set(keys), previous });
}

/** The address of the cloud as it was typed here, and how to ask for it again. */
interface TypedEndpoint {
  label: string;
  askAgain: () => Promise<void>;
}

/**
 * The cloud's address, when it was typed at a prompt: the endpoint question of a document built from
 * questions (OpenStack's Keystone URL), asked again alone with the other answers kept; else the
 * provider's API URL field, when it was asked.
 */
function typedEndpoint(
  definition: ProviderDefinition,
  resolved: Resolved,
  asked: readonly string[],
  options: PromptOptions,
): TypedEndpoint | undefined {
  for (const field of definition.credentials.fields) {
    const built = resolved.get(field.key);
    const question = field.builder?.questions.find((q) => q.endpoint);
    if (!field.builder || !question || !built?.answers || !asked.includes(field.key)) continue;
    const { builder } = field;
    const answers = built.answers;
    return {
      label: answeredLabel(question.message),
      askAgain: async () => {
        const fresh = await askDocumentQuestion(question, answers[question.key]);
        const next = { ...answers, [question.key]: fresh };
        const document = checkedDocument(builder, next);
        resolved.set(field.key, { ...built, value: document, answers: next });
      },
    };
  }
  const url = definition.credentials.fields.find((f) => f.key === definition.apiUrlField);
  if (url && asked.includes(url.key))
    return {
      label: answeredLabel(url.description),
      askAgain: () => promptAgain(definition, resolved, [url.key], options),
    };
  return undefined;
}

/**
 * The cloud could not be reached with what was typed here (a mistyped port, a name that does not
 * resolve): the address is asked again, the other answers kept, or the Secret is written unchecked
 * (as --no-verify), or nothing is. Nothing typed is thrown away.
 */
export async function promptUnreachable(
  definition: ProviderDefinition,
  resolved: Resolved,
  asked: readonly string[],
  options: PromptOptions,
): Promise<'again' | 'unchecked' | 'stop'> {
  const endpoint = typedEndpoint(definition, resolved, asked, options);
  const choice = await select<'again' | 'unchecked' | 'stop'>({
    message: 'The credentials were not checked. What now?',
    choices: [
      ...(endpoint
        ? [{ name: `Type the ${endpoint.label} again (the other answers are kept)`, value: 'again' as const }]
        : []),
      { name: 'Write the Secret without checking it (as --no-verify)', value: 'unchecked' as const },
      { name: 'Stop, and write nothing', value: 'stop' as const },
    ].map((c) => ({ ...c, name: fitted(c.name, columns()) })),
    theme,
  });
  if (choice === 'again' && endpoint) await endpoint.askAgain();
  return choice;
}

/**
 * A document the Secret holds whole (OpenStack's cloud.conf): an existing file, written in the
 * editor, or built from the provider's questions (their answers are returned too, so that one of
 * them can be asked again). The provider's own parser checks it later, when the provider is built
 * from the values; a built one is checked at once. It is what the Secret is for, so there is no
 * skipping it: an empty path goes back to the choices.
 */
async function promptDocument(
  definition: ProviderDefinition,
  field: CredentialField,
  options: PromptOptions,
): Promise<{ document: string; answers?: Record<string, string>; path?: string }> {
  const where = options.secret ? `; it goes to Secret ${options.secret}, key ${field.secretKey}` : '';
  for (;;) {
    const how = await select({
      message: `${field.description}${where}`,
      choices: [
        { name: 'Read an existing file', value: 'file' },
        ...(field.builder ? [{ name: 'Answer a few questions to write one', value: 'build' }] : []),
        { name: 'Write it now (opens $EDITOR)', value: 'editor' },
      ],
      theme,
    });
    if (how === 'build' && field.builder) return buildDocument(field.builder);
    if (how === 'editor') {
      return {
        document: await editor({
          message: `${definition.name} ${field.key}`,
          validate: (v) => (v.trim() ? true : 'empty'),
          theme,
        }),
      };
    }
    const path = (
      await input({
        message: `Path of the ${field.secretKey ?? field.key} file (Enter alone: back to the choices)`,
        validate: (v) => (!v.trim() || isFilePath(v.trim()) ? true : `${v} is not a readable file`),
        theme: themeFor(inputReserve()),
      })
    ).trim();
    if (path) return { document: readValueFile(path, field.key), path };
  }
}

/** One of a builder's questions; `previous` (an earlier answer) is its default. */
async function askDocumentQuestion(q: DocumentQuestion, previous?: string): Promise<string> {
  const validate = (value: string) => {
    const v = value.trim();
    if (!v) return q.required ? `${q.key} is required` : true;
    return q.validate ? q.validate(v) : true;
  };
  const fallback = q.secret ? undefined : (previous ?? q.default);
  const message = `${q.message}${q.required || q.choices || fallback ? '' : ' (optional, Enter to skip)'}`;
  const answer = q.choices
    ? await select({ message, choices: q.choices.map((c) => ({ name: c.name, value: c.value })), theme })
    : q.secret
      ? await secretInput(message, validate)
      : await input({
          message,
          ...(fallback ? { default: fallback } : {}),
          validate,
          theme: themeFor(inputReserve(fallback)),
          ...(q.required || fallback ? {} : { transformer: skippedWhenEmpty }),
        });
  // A secret is kept as typed (a password may end in a space); the rest is trimmed.
  return q.secret ? answer : answer.trim();
}

/** The builder's document from these answers, checked by the provider's own parser. */
function checkedDocument(builder: DocumentBuilder, answers: Record<string, string>): string {
  const document = builder.render(answers);
  const verdict = builder.check(document);
  if (verdict !== true) throw new InvalidConfigError(verdict);
  return document;
}

/** Asks the builder's questions in order, then has the provider check the document they make. */
async function buildDocument(
  builder: DocumentBuilder,
): Promise<{ document: string; answers: Record<string, string> }> {
  const answers: Record<string, string> = {};
  for (const q of builder.questions) {
    if (q.when && !q.when(answers)) continue;
    const answer = await askDocumentQuestion(q);
    if (answer.trim()) answers[q.key] = answer;
  }
  return { document: checkedDocument(builder, answers), answers };
}

/** A key's file as the list shows it: under the home folder as ~/…, as a person writes it. */
function shownPath(path: string): string {
  const home = homedir();
  return home && path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

async function promptSshKey(
  field: CredentialField,
  options: PromptOptions,
): Promise<{ key: string; passphrase?: string } | undefined> {
  const keys = await findSshKeys({
    ...(options.sshDir ? { dir: options.sshDir } : {}),
    ...(options.agentSocket ? { agentSocket: options.agentSocket } : {}),
  });
  const OTHER = '\0other';
  const SKIP = '\0skip';
  // Broken between words, as every question is: the terminal would break it anywhere.
  if (field.advice) process.stdout.write(`${wrapWords(field.advice, columns() - 1).join('\n')}\n`);
  const NEEDS_FILE = 'the Secret needs the private key file';
  const choice = await select({
    message: field.description,
    theme,
    choices: [
      ...keys.map((k) => {
        const where = k.path ? shownPath(k.path) : '(agent only: no private key file)';
        const name = `${k.fingerprint} ${k.type}${k.comment ? ` ${k.comment}` : ''} ${where}${
          k.encrypted ? ' [encrypted]' : ''
        }${k.inAgent ? ' [agent]' : ''}`;
        return {
          name: fitted(name, columns(), k.path ? 0 : NEEDS_FILE.length + 1),
          // Once chosen, the line says which file: the fingerprint was for choosing.
          short: where,
          value: k.path ?? SKIP,
          disabled: k.path ? false : NEEDS_FILE,
        };
      }),
      { name: 'Another file…', value: OTHER },
      ...(field.required ? [] : [{ name: 'None', value: SKIP }]),
    ],
  });
  if (choice === SKIP) return undefined;
  const path =
    choice === OTHER
      ? (
          await input({
            message: 'Path of the private key',
            validate: (v) => {
              const path = v.trim();
              if (!isFilePath(path)) return `${v} is not a readable file`;
              return isPrivateKey(readValueFile(path, field.key))
                ? true
                : `${path} is not a PEM or OpenSSH private key`;
            },
            theme: themeFor(inputReserve()),
          })
        ).trim()
      : choice;
  const key = readValueFile(path, field.key);
  if (!isEncryptedKey(key)) return { key };
  const passphrase = await secretInput(`Passphrase of ${shownPath(path)}`, (v) => {
    try {
      checkPassphrase(key, v);
      return true;
    } catch (err) {
      return (err as Error).message;
    }
  });
  return { key, passphrase };
}
