import type { DocumentBuilder } from '../types.js';
import { parseCloudConfig } from './config.js';

/**
 * The questions `ccm secret create` asks to write a cloud.conf for someone who has none: the
 * [Global] keys of the official controller's documentation for a password or an application
 * credential, and the region. The file is the official controller's format (gcfg), checked by the
 * same parser ccm runs with.
 */
const PASSWORD = 'password';
const APPLICATION_CREDENTIAL = 'application-credential';
const AUTH = 'auth';
const withPassword = (a: Readonly<Record<string, string>>) => a[AUTH] === PASSWORD;
const withApplicationCredential = (a: Readonly<Record<string, string>>) => a[AUTH] === APPLICATION_CREDENTIAL;

/** [Global] keys in the order they are written. */
const WRITTEN = [
  'auth-url',
  'username',
  'password',
  'user-domain-name',
  'tenant-name',
  'tenant-domain-name',
  'application-credential-id',
  'application-credential-secret',
  'region',
] as const;

export const cloudConfBuilder: DocumentBuilder = {
  questions: [
    {
      key: 'auth-url',
      message: 'Keystone URL (auth-url), e.g. https://keystone.example.com:5000/v3',
      required: true,
      endpoint: true,
      validate: (v) => {
        try {
          const url = new URL(v);
          return url.protocol === 'http:' || url.protocol === 'https:' ? true : 'an http(s) URL, please';
        } catch {
          return 'an http(s) URL, please';
        }
      },
    },
    {
      key: AUTH,
      message: 'Authenticate with',
      choices: [
        { name: 'A user name and password', value: PASSWORD },
        { name: 'An application credential (ID and secret)', value: APPLICATION_CREDENTIAL },
      ],
    },
    { key: 'username', message: 'User name (username)', required: true, when: withPassword },
    { key: 'password', message: 'Password (password)', secret: true, required: true, when: withPassword },
    {
      key: 'user-domain-name',
      message: "The user's domain (user-domain-name)",
      default: 'Default',
      when: withPassword,
    },
    { key: 'tenant-name', message: 'Project name (tenant-name)', required: true, when: withPassword },
    {
      key: 'tenant-domain-name',
      message: "The project's domain (tenant-domain-name)",
      default: 'Default',
      when: withPassword,
    },
    {
      key: 'application-credential-id',
      message: 'Application credential ID (application-credential-id)',
      required: true,
      when: withApplicationCredential,
    },
    {
      key: 'application-credential-secret',
      message: 'Application credential secret (application-credential-secret)',
      secret: true,
      required: true,
      when: withApplicationCredential,
    },
    {
      key: 'region',
      message: 'Region (region; Enter when the catalog has only one)',
    },
  ],

  render(answers) {
    const lines = ['[Global]'];
    for (const key of WRITTEN) {
      const value = answers[key];
      if (value) lines.push(`${key} = ${gcfgValue(value)}`);
    }
    return `${lines.join('\n')}\n`;
  },

  check(document) {
    try {
      parseCloudConfig(document, 'the cloud.conf built from the answers');
      return true;
    } catch (err) {
      return (err as Error).message;
    }
  },
};

/**
 * A value as gcfg (the official controller's INI reader) reads it back unchanged: quoted, with
 * gcfg's escapes, when it holds a comment character, a quote, a backslash or outer spaces. (The
 * `ini` package's writer escapes `;` as `\;`, which gcfg refuses.)
 */
export function gcfgValue(value: string): string {
  if (!/[;#"\\\n\t]|^\s|\s$/.test(value)) return value;
  const escaped = value
    .replaceAll('\\', '\\\\')
    .replaceAll('"', '\\"')
    .replaceAll('\n', '\\n')
    .replaceAll('\t', '\\t');
  return `"${escaped}"`;
}
