import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/cli/duration.js';

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1m30s', 90_000],
    ['0', 0],
    ['0s', 0],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    [' 5m ', 300_000],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    '',
    ' ',
    '5',
    '90',
    'abc',
    'm',
    '5x',
    '5 m',
    '1h 30m',
    '-5m',
    '5m-',
    'h1',
    '1d',
    '5m garbage',
    '00',
  ])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
