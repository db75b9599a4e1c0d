/** The cluster project's global teardown: the real cluster goes when the run ends, passed or failed. */
import { leaveCluster } from './harness.js';

export default function setup(): () => Promise<void> {
  return async () => {
    await leaveCluster();
  };
}
