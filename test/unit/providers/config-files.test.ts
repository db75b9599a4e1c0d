import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { filesReadBy, readConfigFile } from '../../../src/providers/config-files.js';
import { tempDir } from '../../helpers/tmp.js';

describe('files a provider reads while it is built', () => {
  it('are named for that build only, nested builds apart, and a failed read names nothing', () => {
    const dir = tempDir('ccm-config-files-');
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    writeFileSync(a, 'A');
    writeFileSync(b, 'B');
    const outer = filesReadBy(() => {
      readConfigFile(b);
      const inner = filesReadBy(() => readConfigFile(a));
      expect(inner).toEqual({ value: 'A', files: [a] });
      expect(() => readConfigFile(join(dir, 'missing'))).toThrow();
      return readConfigFile(a);
    });
    expect(outer).toEqual({ value: 'A', files: [a, b] });
    expect(readConfigFile(b)).toBe('B'); // outside any build: read, noted nowhere
    expect(filesReadBy(() => 1)).toEqual({ value: 1, files: [] });
  });
});
