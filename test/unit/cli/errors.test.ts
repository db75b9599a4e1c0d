import { describe, expect, it } from 'vitest';
import {
  EXIT_FAILED,
  EXIT_OK,
  EXIT_USAGE,
  exitCodeFor,
  oneLine,
  UsageError,
} from '../../../src/cli/errors.js';
import { KubeApiError, KubeConfigError, KubeUnreachableError } from '../../../src/kube/errors.js';
import {
  InvalidConfigError,
  NotFoundError,
  RetryableError,
  UnauthorizedError,
} from '../../../src/providers/errors.js';

/** A row's error has the name it says, and exits with `code`. */
const expectExit = (code: number) => (name: string, error: Error) => {
  expect(error.name).toBe(name);
  expect(exitCodeFor(error)).toBe(code);
};

describe('exit codes', () => {
  it('are 0, 1 and 2', () => {
    expect([EXIT_OK, EXIT_FAILED, EXIT_USAGE]).toEqual([0, 1, 2]);
  });
});

describe('exitCodeFor', () => {
  it.each([
    ['UsageError', new UsageError('bad flag')],
    ['KubeConfigError', new KubeConfigError('no kubeconfig')],
    ['InvalidConfigError', new InvalidConfigError('bad region')],
    ['UnauthorizedError', new UnauthorizedError('401')],
  ])('gives a %s exit 2', expectExit(EXIT_USAGE));

  it.each([
    ['KubeApiError', new KubeApiError('conflict', 409)],
    // An API server away for a moment (an upgrade) answers the CronJob's retry (docs/output.md).
    ['KubeUnreachableError', new KubeUnreachableError('refused')],
    ['NotFoundError', new NotFoundError('gone')],
    ['RetryableError', new RetryableError('503')],
    ['Error', new Error('boom')],
    ['TypeError', new TypeError('x is undefined')],
  ])('gives a %s exit 1', expectExit(EXIT_FAILED));

  it("uses oclif's exit code when the error carries one", () => {
    expect(exitCodeFor(Object.assign(new Error('exit'), { oclif: { exit: 0 } }))).toBe(0);
    expect(exitCodeFor(Object.assign(new Error('exit'), { oclif: { exit: 3 } }))).toBe(3);
    expect(exitCodeFor(Object.assign(new Error('exit'), { oclif: {} }))).toBe(EXIT_FAILED);
  });

  it('gives anything that is not an Error exit 1', () => {
    expect(exitCodeFor('a string')).toBe(EXIT_FAILED);
    expect(exitCodeFor(undefined)).toBe(EXIT_FAILED);
    expect(exitCodeFor(null)).toBe(EXIT_FAILED);
    expect(exitCodeFor(42)).toBe(EXIT_FAILED);
  });
});

describe('oneLine', () => {
  it('strips a leading "Error:"', () => {
    expect(oneLine(new Error('Error: the flag --provider is required'))).toBe(
      'the flag --provider is required',
    );
    expect(oneLine(new Error('  Error:no space'))).toBe('no space');
  });

  it('keeps only the first non-empty line', () => {
    expect(oneLine(new Error('first line\nsecond line\n  at stack'))).toBe('first line');
    expect(oneLine(new Error('\n\n  Error: after blanks  \nmore'))).toBe('after blanks');
  });

  it('leaves a message without decorations as it is', () => {
    expect(oneLine(new UsageError('unknown provider "x"'))).toBe('unknown provider "x"');
    expect(oneLine(new Error('no Error: prefix here'))).toBe('no Error: prefix here');
  });

  it('handles non-Errors and empty messages', () => {
    expect(oneLine('plain text\nmore')).toBe('plain text');
    expect(oneLine(new Error(''))).toBe('unknown error');
    expect(oneLine(new Error('\n  \n'))).toBe('unknown error');
  });
});
