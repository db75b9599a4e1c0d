import { InvalidConfigError } from './errors.js';

/**
 * An answer that is JSON but not what the endpoint returns (a proxy, another service, an API
 * change): one line naming the endpoint, what was expected and the shape that came, never its
 * values (an answer may hold a token).
 */
export function unexpectedAnswer(endpoint: string, expected: string, got: unknown): InvalidConfigError {
  return new InvalidConfigError(
    `${endpoint}: expected ${expected}, got ${shapeOf(got)}; check that the API URL is the cloud's`,
  );
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function shapeOf(value: unknown): string {
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (isObject(value)) {
    const keys = Object.keys(value);
    if (keys.length === 0) return '{}';
    const shown = keys.slice(0, 5).map((k) => JSON.stringify(k));
    return `an object with ${shown.join(', ')}${keys.length > 5 ? ', …' : ''}`;
  }
  return value === null || value === undefined ? String(value) : `a ${typeof value}`;
}
