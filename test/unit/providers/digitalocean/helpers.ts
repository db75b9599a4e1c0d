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
