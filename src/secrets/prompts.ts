import { styleText } from 'node:util';
import { editor, input, password, select } from '@inquirer/prompts';
import { InvalidConfigError } from '../providers/errors.js';
import { loadProvider, providerNames } from '../providers/registry.js';
import type { CredentialField, DocumentBuilder, ProviderDefinition } from '../providers/types.js';
import { checkPassphrase, findSshKeys, isEncryptedKey, isPrivateKey } from './ssh-keys.js';
import { isFilePath, type Resolved, readValueFile } from './values.js';

/**
 * The interactive half: asks, in schema order, for what nothing else gave. Secret answers are
 * masked; each answer is checked as it is typed (required, a readable file, a passphrase that
 * opens the key), and the schema's default is shown.
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

/** Every prompt's theme: the whole question while it is asked, its short label once answered. */
const theme = {
  style: {
    message: (text: string, status: string) =>
      styleText('bold', status === 'done' ? answeredLabel(text) : text),
  },
};

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
}

/** Asks for each field nothing else gave; returns the keys of the fields it asked for. */
export async function promptMissing(
  definition: ProviderDefinition,
  resolved: Resolved,
  options: PromptOptions,
): Promise<string[]> {
  const passphrase = passphraseField(definition);
  const asked: string[] = [];
  for (const field of definition.credentials.fields) {
    if (resolved.has(field.key) || field === passphrase) continue;
    if (options.only && !options.only.has(field.key)) continue;
    // Only what the Secret holds is asked; the rest belongs to `ccm run`'s own flags.
    if (!field.secretKey) continue;
    // The document a provider takes by path (OpenStack's --cloud-config) is that file, read whole.
    if (field.prompt === 'editor' && definition.configFileField && resolved.has(definition.configFileField))
      continue;
    asked.push(field.key);
    const label = `${field.description}${field.required ? '' : ' (optional, Enter to skip)'}`;
    const required = (value: string) => (field.required && !value.trim() ? `${field.key} is required` : true);
    const previous = field.secret ? undefined : options.previous?.get(field.key);
    const fallback = previous ?? field.default;
    let value: string;
    switch (field.prompt) {
      case 'password':
        value = await password({ message: label, mask: '*', validate: required, theme });
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
        value = await promptDocument(definition, field);
        break;
      case 'file': {
        const path = await input({
          message: `${label} — path of the file`,
          validate: (v) =>
            !v.trim() ? required(v) : isFilePath(v.trim()) ? true : `${v} is not a readable file`,
          theme,
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
          theme,
          ...(field.required || fallback ? {} : { transformer: skippedWhenEmpty }),
        });
    }
    if (value.trim() === '') continue;
    resolved.set(field.key, {
      // A document is kept whole (a file ends with its newline), as `--from-file` keeps it.
      value: field.prompt === 'editor' ? value : value.trim(),
      source: field.default !== undefined && value.trim() === field.default ? 'default' : 'prompt',
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

/**
 * A document the Secret holds whole (OpenStack's cloud.conf): an existing file, written in the
 * editor, or built from the provider's questions. The provider's own parser checks it later, when
 * the provider is built from the values; a built one is checked at once. It is what the Secret is
 * for, so there is no skipping it: an empty path goes back to the choices.
 */
async function promptDocument(definition: ProviderDefinition, field: CredentialField) {
  for (;;) {
    const how = await select({
      message: field.description,
      choices: [
        { name: 'Read an existing file', value: 'file' },
        ...(field.builder ? [{ name: 'Answer a few questions to write one', value: 'build' }] : []),
        { name: 'Write it now (opens $EDITOR)', value: 'editor' },
      ],
      theme,
    });
    if (how === 'build' && field.builder) return buildDocument(field.builder);
    if (how === 'editor') {
      return editor({
        message: `${definition.name} ${field.key}`,
        validate: (v) => (v.trim() ? true : 'empty'),
        theme,
      });
    }
    const path = (
      await input({
        message: `Path of the ${field.secretKey ?? field.key} file (Enter alone: back to the choices)`,
        validate: (v) => (!v.trim() || isFilePath(v.trim()) ? true : `${v} is not a readable file`),
        theme,
      })
    ).trim();
    if (path) return readValueFile(path, field.key);
  }
}

/** Asks the builder's questions in order, then has the provider check the document they make. */
async function buildDocument(builder: DocumentBuilder): Promise<string> {
  const answers: Record<string, string> = {};
  for (const q of builder.questions) {
    if (q.when && !q.when(answers)) continue;
    const validate = (value: string) => {
      const v = value.trim();
      if (!v) return q.required ? `${q.key} is required` : true;
      return q.validate ? q.validate(v) : true;
    };
    const message = `${q.message}${q.required || q.choices || q.default ? '' : ' (optional, Enter to skip)'}`;
    const answer = q.choices
      ? await select({ message, choices: q.choices.map((c) => ({ name: c.name, value: c.value })), theme })
      : q.secret
        ? await password({ message, mask: '*', validate, theme })
        : await input({
            message,
            ...(q.default ? { default: q.default } : {}),
            validate,
            theme,
            ...(q.required || q.default ? {} : { transformer: skippedWhenEmpty }),
          });
    // A secret is kept as typed (a password may end in a space); the rest is trimmed.
    if (answer.trim()) answers[q.key] = q.secret ? answer : answer.trim();
  }
  const document = builder.render(answers);
  const verdict = builder.check(document);
  if (verdict !== true) throw new InvalidConfigError(verdict);
  return document;
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
  if (field.advice) process.stdout.write(`${field.advice}\n`);
  const choice = await select({
    message: field.description,
    theme,
    choices: [
      ...keys.map((k) => ({
        name: `${k.fingerprint} ${k.type}${k.comment ? ` ${k.comment}` : ''} ${
          k.path ? k.path : '(agent only: no private key file)'
        }${k.encrypted ? ' [encrypted]' : ''}${k.inAgent ? ' [agent]' : ''}`,
        value: k.path ?? SKIP,
        disabled: k.path ? false : 'the Secret needs the private key file',
      })),
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
            theme,
          })
        ).trim()
      : choice;
  const key = readValueFile(path, field.key);
  if (!isEncryptedKey(key)) return { key };
  const passphrase = await password({
    message: `Passphrase of ${path}`,
    mask: '*',
    theme,
    validate: (v) => {
      try {
        checkPassphrase(key, v);
        return true;
      } catch (err) {
        return (err as Error).message;
      }
    },
  });
  return { key, passphrase };
}
