import { describe, expect, it } from 'vitest';
import { intern, internedCount } from '../../src/intern.js';

describe('intern', () => {
  it('keeps one entry per distinct short string, and gives the same value back', () => {
    const before = internedCount();
    const values = Array.from({ length: 3 }, () => ['amd64', 'linux', 's-2vcpu-4gb'].map((v) => `${v}`));
    const interned = values.flat().map(intern);
    expect(interned).toEqual(values.flat());
    expect(internedCount()).toBe(before + 3);
  });

  it('leaves out strings longer than 64 characters', () => {
    const before = internedCount();
    const long = 'x'.repeat(65);
    expect(intern(long)).toBe(long);
    expect(internedCount()).toBe(before);
  });

  it('never holds more than 4,096 strings: full, it starts afresh, and still shares what comes after', () => {
    const start = internedCount();
    for (let i = 0; i < 10_000; i++) {
      expect(intern(`unique-${i}`)).toBe(`unique-${i}`);
      expect(internedCount()).toBeLessThanOrEqual(4096);
    }
    // Two fresh starts: what is left is the remainder past the second.
    expect(internedCount()).toBe((start + 10_000) % 4096);
    const before = internedCount();
    for (let i = 0; i < 100; i++) intern(`new-zone-${i % 2}`);
    expect(internedCount()).toBe(before + 2);
  });
});
