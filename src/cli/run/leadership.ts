import type { LeaderElector } from '../../kube/lease.js';

/**
 * Whether this replica may write and runs its controllers. One handle every stage shares: the
 * transport and the cloud ask `mayWrite`, readiness reads it, and only the lifecycle stage changes it.
 */
export class Leadership {
  /** The elector on the Lease; none without leader election. */
  elector?: LeaderElector;
  /** Whether the controllers run: from the start without leader election, else while leading. */
  leading: boolean;

  constructor(readonly elect: boolean) {
    this.leading = !elect;
  }

  /**
   * The one write gate, for Kubernetes and the cloud alike. Only leadership gates writes: a graceful
   * shutdown lets in-flight writes finish.
   */
  readonly mayWrite = (): boolean => (this.elector ? this.elector.isLeader() : true);
}
