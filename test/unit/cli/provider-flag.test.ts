/**
 * The --provider flag lists the registry's clouds, not a hard-coded one (issue 6, item 11): with a
 * registry that knows two clouds, the description names both.
 */
import { describe, expect, it, vi } from 'vitest';

vi.mock('../../../src/providers/registry.js', () => ({
  providerNames: ['cloudlycke', 'digitalocean'],
  loadProvider: async () => {
    throw new Error('not loaded in this test');
  },
}));

describe('--provider', () => {
  it('describes every provider of the registry', async () => {
    const { BaseCommand } = await import('../../../src/cli/base-command.js');
    expect(BaseCommand.baseFlags.provider.description).toBe('Cloud provider: cloudlycke, digitalocean');
  });
});
