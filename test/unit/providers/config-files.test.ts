import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { filesReadBy, readConfigFile } from '../../../src/providers/config-files.js';
import { tempDir } from '../../helpers/tmp.js';

describe('files a provider reads while it is built', () => {
  it('are named with what was read, for that build only, nested builds apart; a failed read names nothing', () => {
    const dir = tempDir('ccm-config-files-');
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    writeFileSync(a, 'A');
    writeFileSync(b, 'B');
    const outer = filesReadBy(() => {
      readConfigFile(b);
      const inner = filesReadBy(() => readConfigFile(a));
      expect(inner.value).toBe('A');
      expect([...inner.files]).toEqual([[a, 'A']]);
      expect(() => readConfigFile(join(dir, 'missing'))).toThrow();
      return readConfigFile(a);
    });
    expect(outer.value).toBe('A');
    expect([...outer.files].sort()).toEqual([
      [a, 'A'],
      [b, 'B'],
    ]);
    expect(readConfigFile(b)).toBe('B'); // outside any build: read, noted nowhere
    expect(filesReadBy(() => 1).files.size).toBe(0);
  });
});
