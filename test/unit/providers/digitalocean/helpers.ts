import { afterEach, beforeEach, expect } from 'vitest';
import { createDigitalOcean } from '../../../../src/providers/digitalocean/index.js';
import { DigitalOceanSimulator } from '../../../clouds/digitalocean/server.js';
import { useSimulator } from '../../../helpers/use-simulator.js';

/**
 * The DigitalOcean simulator of a test file: started once, emptied before each test, and after each
 * test no request of ccm's that DigitalOcean's OpenAPI document refuses.
 */
export function useDigitalOceanSim(): DigitalOceanSimulator {
  const sim = useSimulator(() => DigitalOceanSimulator.start());
  beforeEach(() => sim.reset());
  afterEach(() => {
    expect(sim.takeViolations()).toEqual([]);
  });
  return sim;
}

/** The provider on `sim`, retrying after 5 ms. */
/** The provider with quick retries, and no listing reused: each call sees what the test did to the simulator. */
export function quickProvider(sim: DigitalOceanSimulator, recentListingMs = 0) {
  return createDigitalOcean(
    { token: sim.token, baseUrl: sim.url, http: { backoff: { baseMs: 5 } } },
    {},
    { recentListingMs, listingGapMs: 0 },
  );
}

/**
 * A fetch for the client's test seam (`http.fetch`) whose answers to the load balancer listing are
 * held on their way back to ccm from `hold()` until `release()`: the cloud made the listing, ccm has
 * not read it yet (a listing that races a write).
 */
export function heldListings() {
  let gate: Promise<void> | undefined;
  let open: () => void = () => {};
  const held: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if ((init?.method ?? 'GET') === 'GET' && url.pathname === '/v2/load_balancers' && gate) {
      const body = await res.text();
      await gate;
      return new Response(body, { status: res.status, headers: res.headers });
    }
    return res;
  };
  return {
    fetch: held,
    hold() {
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
    },
    release() {
      open();
    },
  };
}

/** Waits, 5 ms at a time and 5 s at most, until `check` holds (a request arrived at the simulator, say). */
export async function untilSeen(what: string, check: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
