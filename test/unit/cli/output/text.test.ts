import { describe, expect, it } from 'vitest';
import * as text from '../../../../src/cli/output/text.js';

describe('text helpers', () => {
  it('sorts as people count: node-2 before node-10', () => {
    expect(['node-10', 'node-2', 'node-1', 'node-100', 'a-node'].sort(text.naturalCompare)).toEqual([
      'a-node',
      'node-1',
      'node-2',
      'node-10',
      'node-100',
    ]);
  });

  it('says 1 Node, 0 Nodes, 5,000 Nodes', () => {
    expect(text.plural(1, ['Node', 'Nodes'])).toBe('1 Node');
    expect(text.plural(0, ['Node', 'Nodes'])).toBe('0 Nodes');
    expect(text.plural(5000, ['Node', 'Nodes'])).toBe('5,000 Nodes');
    expect(text.plural(1, 'cloud call')).toBe('1 cloud call');
    expect(text.plural(2, 'cloud call')).toBe('2 cloud calls');
  });

  it('cuts prose after a whole word and tokens where the room ends, always with an ellipsis', () => {
    expect(text.truncate('no cloud instance is named node-20', 40)).toBe(
      'no cloud instance is named node-20',
    );
    expect(text.truncate('no cloud instance is named node-20', 20)).toBe('no cloud instance…');
    expect(text.truncate('cloudlycke://a-very-long-instance-id', 16)).toBe('cloudlycke://a-…');
    expect(text.widthOf(text.truncate('cloudlycke://a-very-long-instance-id', 16))).toBe(16);
    expect(text.truncate('anything', 1)).toBe('…');
    expect(text.truncate('anything', 0)).toBe('');
  });

  it('measures terminal cells: East Asian wide characters take two, combining and zero-width ones none', () => {
    expect(text.widthOf('工作节点')).toBe(8);
    expect(text.widthOf('worker-3\u0301\u0301')).toBe(8);
    expect(text.widthOf('worker-3\u200b')).toBe(8);
    expect(text.widthOf('worker-3')).toBe(8);
    const cut = text.truncate('工作节点工作节点工作节点', 9);
    expect(cut).toBe('工作节点…');
    expect(text.widthOf(cut)).toBeLessThanOrEqual(9);
    // A letter is not cut from its accents.
    expect(text.truncate('e\u0301e\u0301e\u0301e\u0301', 3)).toBe('e\u0301e\u0301…');
  });

  it('fits columns: free text gives first, names last, narrow columns keep their width', () => {
    expect(text.fitWidths([5, 10, 50], 100)).toEqual([5, 10, 50]);
    expect(text.fitWidths([7, 11, 20, 100], 60, ['last', 'last', 'normal', 'first'])).toEqual([
      7, 11, 20, 22,
    ]);
    const tight = text.fitWidths([7, 11, 20, 100], 40, ['last', 'last', 'normal', 'first']);
    expect(tight.slice(0, 2)).toEqual([7, 11]);
    expect(tight.reduce((a, b) => a + b)).toBeLessThanOrEqual(40);
  });

  it('writes logfmt values bare when it can, quoted when it must', () => {
    expect(text.logfmtValue('cloudlycke://node-1')).toBe('cloudlycke://node-1');
    expect(text.logfmtValue('no instance "x"')).toBe('"no instance \\"x\\""');
    expect(text.logfmtValue('a=b')).toBe('"a=b"');
  });

  it('groups a note many rows share into one line with their count, and caps the lines', () => {
    const entries = [
      ...Array.from({ length: 5000 }, (_, i) => ({
        name: `n-${i}`,
        note: 'no Node is deleted on an empty listing',
      })),
      { name: 'n-7', note: 'event Synced not recorded' },
    ];
    expect(text.groupNotes(entries, ['Node', 'Nodes'])).toEqual([
      'note (5,000 Nodes): no Node is deleted on an empty listing',
      'note: n-7: event Synced not recorded',
    ]);
    const many = Array.from({ length: 9 }, (_, i) => ({ name: `n-${i}`, note: `note ${i}` }));
    const lines = text.groupNotes(many, ['Node', 'Nodes'], 5);
    expect(lines).toHaveLength(6);
    expect(lines[5]).toBe('… 4 more notes');
  });
});

describe('wrapWords', () => {
  it('breaks between words, never inside one that fits a line, and cuts nothing', () => {
    const sentence = "Region slug (e.g. nyc3) of the cluster's load balancers (optional, Enter to skip)";
    const lines = text.wrapWords(sentence, 30);
    expect(lines.join(' ')).toBe(sentence);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(30);
    expect(lines).toContain('(optional, Enter to skip)');
  });

  it('splits only a word longer than a whole line, where the line ends', () => {
    expect(text.wrapWords('key SHA256:abcdefghijklmnop done', 10)).toEqual([
      'key',
      'SHA256:abc',
      'defghijklm',
      'nop done',
    ]);
    expect(text.wrapWords('工作节点', 3)).toEqual(['工', '作', '节', '点']);
  });
});
