/** A cloud simulator for a vitest file, with its hooks. */
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/**
 * Starts a simulator before each test (`each`) or once before the file's first, and stops it after.
 * The returned object stands for the simulator of the moment (filled in by the hooks).
 */
export function useSimulator<S extends object & { stop(): Promise<void> }>(
  start: () => Promise<S>,
  { each = false }: { each?: boolean } = {},
): S {
  let current: S | undefined;
  const up = async () => {
    current = await start();
  };
  const down = async () => {
    await current?.stop();
  };
  if (each) {
    beforeEach(up);
    afterEach(down);
  } else {
    beforeAll(up);
    afterAll(down);
  }
  const now = (): S => {
    if (!current) throw new Error('the simulator is used before its hook started it');
    return current;
  };
  return new Proxy({} as S, {
    get: (_, key) => {
      const value = Reflect.get(now(), key);
      return typeof value === 'function' ? value.bind(now()) : value;
    },
    set: (_, key, value) => Reflect.set(now(), key, value),
  });
}
