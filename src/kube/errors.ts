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

/** The API server could not be reached at all (refused, DNS, TLS, timeout). */
export class KubeUnreachableError extends Error {
  override name = 'KubeUnreachableError';
}

interface ApiExceptionLike {
  code: number;
  body: unknown;
}

function isApiException(err: unknown): err is ApiExceptionLike {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as ApiExceptionLike).code === 'number' &&
    'body' in err
  );
}

function statusMessage(body: unknown): string | undefined {
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  if (parsed && typeof parsed === 'object' && typeof (parsed as { message?: unknown }).message === 'string') {
    return (parsed as { message: string }).message;
  }
  return undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Turns whatever client-node threw into KubeApiError or KubeUnreachableError, with `what` as context. */
export function toKubeError(err: unknown, what: string, server: string): Error {
  if (err instanceof KubeApiError || err instanceof KubeUnreachableError) return err;
  if (isApiException(err)) {
    const message = statusMessage(err.body) ?? `HTTP ${err.code}`;
    return new KubeApiError(`${what}: ${message.split('\n')[0]}`, err.code);
  }
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const detail = cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err);
  return new KubeUnreachableError(
    `cannot reach the Kubernetes API server at ${server} (${detail}); check --kubeconfig and --context`,
  );
}
