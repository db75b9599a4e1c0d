import { expect } from 'vitest';
import { InvalidConfigError } from '../../../src/providers/errors.js';

/** The message of the InvalidConfigError `parse` throws, checked to be one line; `what` names the input. */
export function invalidConfigMessage(parse: () => unknown, what: string): string {
  try {
    parse();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidConfigError);
    const message = (err as Error).message;
    expect(message).not.toMatch(/[\r\n]/);
    return message;
  }
  throw new Error(`expected ${what} to be refused`);
}
