import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileNotRead, filesReadBy, readConfigFile } from '../../../src/providers/config-files.js';
import { tempDir } from '../../helpers/tmp.js';

describe('files a provider reads while it is built', () => {
  it('are named with what was read (null: unreadable), for that build only, nested builds apart', () => {
    const dir = tempDir('ccm-config-files-');
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    const missing = join(dir, 'missing');
    writeFileSync(a, 'A');
    writeFileSync(b, 'B');
    const outer = filesReadBy(() => {
      readConfigFile(b);
      const inner = filesReadBy(() => readConfigFile(a));
      expect(inner.value).toBe('A');
      expect([...inner.files]).toEqual([[a, 'A']]);
      expect(() => readConfigFile(missing)).toThrow();
      return readConfigFile(a);
    });
    expect(outer.value).toBe('A');
    expect([...outer.files].sort()).toEqual([
      [a, 'A'],
      [b, 'B'],
      [missing, null],
    ]);
    expect(readConfigFile(b)).toBe('B'); // outside any build: read, noted nowhere
    expect(filesReadBy(() => 1).files.size).toBe(0);
  });

  it('with what a reload read beforehand: nothing is read from disk, and a file not given is asked for', () => {
    const gone = Object.assign(new Error('ENOENT: gone'), { code: 'ENOENT' });
    const given = new Map<string, string | Error>([
      ['/etc/ccm/clouds.yaml', 'clouds: {}'],
      ['/etc/ccm/ca.pem', gone],
    ]);
    const built = filesReadBy(() => {
      expect(() => readConfigFile('/etc/ccm/ca.pem')).toThrow(gone);
      return readConfigFile('/etc/ccm/clouds.yaml');
    }, given);
    expect(built.value).toBe('clouds: {}');
    expect([...built.files].sort()).toEqual([
      ['/etc/ccm/ca.pem', null],
      ['/etc/ccm/clouds.yaml', 'clouds: {}'],
    ]);
    let asked: unknown;
    try {
      filesReadBy(() => readConfigFile('/etc/ccm/other'), given);
    } catch (err) {
      asked = err;
    }
    expect(asked).toBeInstanceOf(FileNotRead);
    expect((asked as FileNotRead).path).toBe('/etc/ccm/other');
  });
});
