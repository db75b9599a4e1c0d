/** Errors of the Kubernetes side, each with one line a person can act on. */

export class KubeConfigError extends Error {
  override name = 'KubeConfigError';
}

/** A request the API server answered with a status, e.g. 409 on a stale resourceVersion. */
export class KubeApiError extends Error {
  override name = 'KubeApiError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * A 401: the API server does not accept these credentials. A configuration error (exit 2): asking
 * again with the same kubeconfig cannot help.
 */
export class KubeUnauthorizedError extends KubeApiError {
  override name = 'KubeUnauthorizedError';
}

/** The API server could not be reached at all (refused, DNS, TLS, timeout). */
export class KubeUnreachableError extends Error {
  override name = 'KubeUnreachableError';
}

/** A write refused locally because this replica does not hold the leader Lease. */
export class NotLeaderError extends Error {
  override name = 'NotLeaderError';
}

/** An answer, or one watch event, larger than ccm reads (transport.ts): the endpoint is broken. */
export class KubeResponseTooLargeError extends Error {
  override name = 'KubeResponseTooLargeError';
}
