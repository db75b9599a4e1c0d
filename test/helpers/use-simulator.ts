/** A cloud simulator for a vitest file, with its hooks. */
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { KeyFolder, type KeyOptions, type TestKey } from '../clouds/triton/keys.js';
import { TritonSim, type TritonSimOptions } from '../clouds/triton/server.js';

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

/**
 * A Triton simulator for the file, with one account key (`keyOptions`, ECDSA P-256 by default)
 * registered; `keys` makes more. The keys' folder is removed after the file.
 */
export function useTritonSim(
  options: TritonSimOptions,
  keyOptions: KeyOptions = { type: 'ecdsa', bits: 256 },
): { sim: TritonSim; readonly key: TestKey; readonly keys: KeyFolder } {
  let keys: KeyFolder | undefined;
  let key: TestKey | undefined;
  const sim = useSimulator(async () => {
    keys = new KeyFolder();
    key = keys.make(keyOptions);
    const started = await new TritonSim(options).start();
    started.addKey(key.publicKey);
    return started;
  });
  afterAll(() => keys?.remove());
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the Triton simulator is used before its hook started it');
    return value;
  };
  return {
    sim,
    get key() {
      return started(key);
    },
    get keys() {
      return started(keys);
    },
  };
}
