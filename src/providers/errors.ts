/**
 * Typed provider errors. Each carries one line a person can act on; none may carry a credential.
 * Controllers decide by `kind`, never by message text.
 */
export type ProviderErrorKind = 'NotFound' | 'Retryable' | 'Unauthorized' | 'InvalidConfig';

export abstract class ProviderError extends Error {
  abstract readonly kind: ProviderErrorKind;
}

/** The cloud positively answered that the resource does not exist (e.g. HTTP 404). */
export class NotFoundError extends ProviderError {
  readonly kind = 'NotFound' as const;
  override name = 'NotFoundError';
}

/** A transient failure (5xx, 429, timeout, network); try again after `retryAfterMs`. */
export class RetryableError extends ProviderError {
  readonly kind = 'Retryable' as const;
  override name = 'RetryableError';
  constructor(
    message: string,
    readonly retryAfterMs = 0,
  ) {
    super(message);
  }
}

/**
 * The resource exists but the cloud is not done with it (still being created, or errored): try again
 * after `retryAfterMs`. `annotations` already name it, and the controller records them on the Service
 * now, so that from its creation on it is that Service's claim (a restart finds it by them, another
 * Service naming it is refused, and deleting the Service deletes it).
 */
export class ProvisioningError extends RetryableError {
  override name = 'ProvisioningError';
  constructor(
    message: string,
    retryAfterMs: number,
    readonly annotations: Readonly<Record<string, string>>,
  ) {
    super(message, retryAfterMs);
  }
}

/**
 * No answer at all: the name did not resolve, the connection or its TLS failed, or the request timed
 * out. Nothing is known about the credentials. Transient for the controllers (a RetryableError).
 */
export class UnreachableError extends RetryableError {
  override name = 'UnreachableError';
}

export function isUnreachable(err: unknown): err is UnreachableError {
  return err instanceof UnreachableError;
}

/** The cloud refused the credentials (401/403). Never evidence that anything is gone. */
export class UnauthorizedError extends ProviderError {
  readonly kind = 'Unauthorized' as const;
  override name = 'UnauthorizedError';
}

/** The configuration handed to the provider is wrong; the message says what to fix. */
export class InvalidConfigError extends ProviderError {
  readonly kind = 'InvalidConfig' as const;
  override name = 'InvalidConfigError';
}

export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}

export function isNotFound(err: unknown): err is NotFoundError {
  return err instanceof NotFoundError;
}
