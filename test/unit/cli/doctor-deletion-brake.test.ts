/** `ccm doctor`'s deletion-brake check: a warning while the brake holds, with the command that releases it. */
import { describe, expect, it } from 'vitest';
import { brakeSetting, checkDeletionBrake } from '../../../src/cli/doctor-checks.js';
import {
  type BrakeNode,
  brakeVerdict,
  DEFAULT_BRAKE_OPTIONS,
} from '../../../src/controllers/deletion-brake.js';

const nodes = (n: number): BrakeNode[] =>
  Array.from({ length: n }, (_, i) => ({ name: `w${i}`, uid: `u${i}`, providerID: `digitalocean://${i}` }));

const judge = (managed: number, missing: number) =>
  brakeVerdict({
    managed: nodes(managed),
    missing: nodes(managed).slice(0, missing),
    deletions: [],
    now: Date.now(),
    options: DEFAULT_BRAKE_OPTIONS,
  });

const SECRET = { namespace: 'kube-system', name: 'digitalocean' };

describe('checkDeletionBrake', () => {
  it('warns while the brake holds, names the Nodes and the two ways to release the hold', () => {
    const verdict = judge(10, 6);
    const check = checkDeletionBrake(verdict, DEFAULT_BRAKE_OPTIONS, SECRET);
    expect(check).toMatchObject({ id: 'deletion-brake', status: 'warn' });
    expect(check.message).toMatch(
      new RegExp(
        `^ccm holds every Node deletion \\(hold ${verdict.id}\\): the instances of 6 of 10 Nodes \\(60%\\)`,
      ),
    );
    expect(check.fix).toContain(`ccm nodes init --allow-mass-deletion ${verdict.id}`);
    expect(check.fix).toContain(
      `kubectl -n kube-system annotate secret digitalocean ccm.io/allow-mass-deletion=${verdict.id} --overwrite`,
    );
    expect(check.items).toEqual(['w0', 'w1', 'w2', 'w3', 'w4', 'w5']);
  });

  it('passes when nothing is missing, and when what is missing stays under the ratio', () => {
    expect(checkDeletionBrake(judge(10, 0), DEFAULT_BRAKE_OPTIONS, SECRET).status).toBe('pass');
    const some = checkDeletionBrake(judge(10, 2), DEFAULT_BRAKE_OPTIONS, undefined);
    expect(some).toMatchObject({ status: 'pass', items: ['w0', 'w1'] });
    expect(some.message).toMatch(/^2 Node\(s\)' instances missing .*: their deletion is not held$/);
  });
});

describe('brakeSetting', () => {
  it('reads the deployed ccm run flags, else the defaults', () => {
    expect(brakeSetting(undefined)).toEqual({
      options: DEFAULT_BRAKE_OPTIONS,
      deletionGracePeriodMs: 300_000,
    });
    const args = [
      'run',
      '--max-deletion-ratio=0.3',
      '--node-deletion-rate',
      '1',
      '--deletion-grace-period=0s',
    ];
    expect(brakeSetting({ args })).toEqual({
      options: { ...DEFAULT_BRAKE_OPTIONS, maxRatio: 0.3, rate: 1 },
      deletionGracePeriodMs: 0,
    });
  });
});
