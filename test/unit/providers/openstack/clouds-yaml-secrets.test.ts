/**
 * A clouds.yaml password never reaches an error message or stderr (an outside review's reproductions,
 * R4-5a and R4-5b failed on b7eebaf). The reload
 * logs the build's error message ("re-reading credentials or cloud config failed: …; keeping the
 * current ones"), and the start-up prints it as its one line of error.
 * - R4-5a: an unquoted password starting with `*` (a YAML alias): the error names it.
 * - R4-5b: an unquoted password starting with `!` (a YAML tag): the `yaml` package emits a process
 *   warning quoting the whole source line, password included (stderr, outside the JSON log).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cloudsYamlGlobal } from '../../../../src/providers/openstack/clouds-yaml.js';
import { tempDir } from '../../../helpers/tmp.js';

const SECRET = 'Zq7Xv9SecretPw';

function write(password: string): string {
  const file = join(tempDir('ccm-r4-5-'), 'clouds.yaml');
  writeFileSync(
    file,
    `clouds:\n  r4:\n    auth:\n      auth_url: https://keystone.example:5000/v3\n      username: admin\n      password: ${password}\n`,
  );
  return file;
}

describe('a clouds.yaml password never reaches an error or a warning', () => {
  it('R4-5a: a password starting with * (read as an alias)', () => {
    const file = write(`*${SECRET}`);
    let message = '';
    try {
      cloudsYamlGlobal([file], 'r4');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toBe('');
    expect(message, message).not.toContain(SECRET);
  });

  it('R4-5b: a password starting with ! (read as a tag)', async () => {
    const file = write(`!${SECRET}`);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    const emit = process.emitWarning;
    // Also catch what would be printed to stderr.
    process.emitWarning = ((w: string | Error, ...rest: unknown[]) => {
      warnings.push(typeof w === 'string' ? w : w.message);
      return (emit as (...a: unknown[]) => void).call(process, w, ...rest);
    }) as typeof process.emitWarning;
    let message = '';
    try {
      cloudsYamlGlobal([file], 'r4');
    } catch (err) {
      message = (err as Error).message;
    } finally {
      process.emitWarning = emit;
      await new Promise((r) => setTimeout(r, 20));
      process.off('warning', onWarning);
    }
    const leaked = [message, ...warnings].filter((w) => w.includes(SECRET));
    expect(leaked, leaked.join('\n')).toEqual([]);
  });
});

describe('a cloud.conf secret never reaches an error', () => {
  it('R4-5c: an application-credential-secret wrapped onto a second line (an editor, `fold`, a template)', async () => {
    const { parseCloudConfig } = await import('../../../../src/providers/openstack/config.js');
    const text =
      '[Global]\nauth-url=https://keystone.example:5000/v3\napplication-credential-id=abc\n' +
      `application-credential-secret=${SECRET.slice(0, 6)}\n${SECRET.slice(6)}\nregion=RegionOne\n`;
    let message = '';
    try {
      parseCloudConfig(text, '/etc/config/cloud.conf');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toBe('');
    expect(message, message).not.toContain(SECRET.slice(6));
  });
});
