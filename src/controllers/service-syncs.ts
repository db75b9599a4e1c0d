/**
 * Services synced in parallel by default. Upstream's is 1, which makes each Service wait for every
 * other's cloud round trips; here the shared cloud budget paces the requests, so enough workers that
 * a wait for the budget is the only wait (16 keep DigitalOcean's whole minute of 240 requests busy at
 * its latency).
 */
export const DEFAULT_CONCURRENT_SERVICE_SYNCS = 16;
