/**
 * ballast's error taxonomy. The batch pipeline decides what happens to a record from the branch
 * alone: a {@link TransientError} is retried later (reported as a batch item failure, visibility
 * backed off); a {@link FatalError} goes straight to the DLQ with its `reason` as an attribute.
 * Match with `instanceof`, never with `name` strings.
 */

/** Stable reason codes, used as log fields, metric dimensions and DLQ message attributes. */
export const REASONS = {
  // fatal
  invalidEnvelope: 'invalid-envelope',
  unknownJobType: 'unknown-job-type',
  invalidPayload: 'invalid-payload',
  idempotencyKeyReused: 'idempotency-key-reused',
  staleVersion: 'stale-version',
  itemTooLarge: 'item-too-large',
  transactionTooLarge: 'transaction-too-large',
  transactionItemRepeated: 'transaction-item-repeated',
  nestingTooDeep: 'nesting-too-deep',
  invalidRequest: 'invalid-request',
  // transient
  incompatibleVersion: 'incompatible-version',
  jobInProgress: 'job-in-progress',
  lockBusy: 'lock-busy',
  fenced: 'fenced',
  transactionConflict: 'transaction-conflict',
  /** DynamoDB cancelled a transaction for a reason ballast cannot pin on a condition, a conflict or throttling (its codes are in the error's context). */
  transactionCancelled: 'transaction-cancelled',
  throttled: 'throttled',
  dependencyUnavailable: 'dependency-unavailable',
  deadline: 'deadline',
  groupBlocked: 'group-blocked',
  unexpected: 'unexpected',
} as const;
/** A reason the framework itself raises. */
export type FrameworkReason = (typeof REASONS)[keyof typeof REASONS];
/**
 * The framework's reasons and the ones workloads declare (`Workload.reasons`, e.g. a business
 * rule's refusal), which the registry checks are lowercase-hyphenated and collide with none.
 */
export type Reason = FrameworkReason | (string & { readonly __workloadReason?: never });

export interface BallastErrorOptions extends ErrorOptions {
  /** Structured facts for logs (never secrets). */
  readonly context?: Record<string, unknown>;
}

/**
 * Base of every error ballast raises on purpose. Each of ours names itself on its prototype
 * (`static { this.prototype.name = 'LockBusyError'; }`): the stack's bundles are minified, which
 * renames classes, and `name` is what a log line's `errorName` says. A subclass that does not is
 * named by its class (as the bundle has it, if minified).
 */
export abstract class BallastError extends Error {
  readonly reason: Reason;
  readonly context: Record<string, unknown>;

  constructor(reason: Reason, message: string, options: BallastErrorOptions = {}) {
    super(message, options);
    if (!Object.hasOwn(new.target.prototype, 'name')) this.name = new.target.name;
    this.reason = reason;
    this.context = options.context ?? {};
  }
}

/** Worth retrying later: the same message may succeed on a later receive. */
export class TransientError extends BallastError {
  static { this.prototype.name = 'TransientError'; }
}

/** Retrying cannot help: the message goes to the DLQ with its reason. */
export class FatalError extends BallastError {
  static { this.prototype.name = 'FatalError'; }
}

/** The body is not a valid envelope (bad JSON, missing or malformed fields). */
export class InvalidEnvelopeError extends FatalError {
  static { this.prototype.name = 'InvalidEnvelopeError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.invalidEnvelope, message, options);
  }
}

/**
 * The envelope's major schema version is not one this worker reads. Transient: a newer worker may
 * be rolling out; past the receive limit the message lands in the DLQ, replayable later.
 */
export class IncompatibleVersionError extends TransientError {
  static { this.prototype.name = 'IncompatibleVersionError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.incompatibleVersion, message, options);
  }
}

/** The same idempotency key arrived for another resource or payload: a producer bug, never a retry. */
export class IdempotencyKeyReusedError extends FatalError {
  static { this.prototype.name = 'IdempotencyKeyReusedError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.idempotencyKeyReused, message, options);
  }
}

/** Another worker holds the job's claim (IN_PROGRESS with a live lease). */
export class JobInProgressError extends TransientError {
  static { this.prototype.name = 'JobInProgressError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.jobInProgress, message, options);
  }
}

/** Another worker holds the resource's lease lock. */
export class LockBusyError extends TransientError {
  static { this.prototype.name = 'LockBusyError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.lockBusy, message, options);
  }
}

/**
 * Not started before the invocation's deadline, though earlier records of its lane (records
 * sharing resources with it) ran: it waited for its resources, as a job meeting a held lock does.
 * Its reason stays `deadline` (the time ran out; no lock was met).
 */
export class LaneWaitError extends TransientError {
  static { this.prototype.name = 'LaneWaitError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.deadline, message, options);
  }
}

/**
 * A verdict (its reason kept) whose claim could not be given back: it waits for its own claim's
 * lease to end (`retryAfterMs`), so that a later receive takes the claim over, meets the same
 * verdict and gives it back before the DLQ.
 */
export class ClaimHeldError extends TransientError {
  static { this.prototype.name = 'ClaimHeldError'; }
}

/** Whether a failure is a wait for a busy resource (or its own held claim), which its last receive requeues rather than dead-letters. */
export function waitedForResource(error: BallastError): boolean {
  return error instanceof LockBusyError || error instanceof LaneWaitError || error instanceof ClaimHeldError;
}

/** Our lease was taken over (we stalled past it): our commit was refused and changed nothing. */
export class FencedError extends TransientError {
  static { this.prototype.name = 'FencedError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.fenced, message, options);
  }
}

/** True for errors that should be retried even though ballast did not raise them. */
export function isRetryableAwsError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const meta = (error as { $retryable?: unknown; $metadata?: { httpStatusCode?: number } });
  if (meta.$retryable) return true;
  const status = meta.$metadata?.httpStatusCode ?? 0;
  return status >= 500 || status === 429 ||
    ['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded', 'TimeoutError',
      'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'TransactionInProgressException'].includes(error.name) ||
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes((error as { code?: string }).code ?? '');
}

/**
 * A request the service refused as invalid (DynamoDB's `ValidationException`: an item over 400 KB,
 * more than 100 transaction items, one item twice in a transaction, nesting beyond 32 levels).
 * The same request can never succeed, so it is fatal at once, with the limit as its reason.
 */
export class RequestRejectedError extends FatalError {
  static { this.prototype.name = 'RequestRejectedError'; }
}

/** DynamoDB's ValidationException messages, by the limit they name. */
const VALIDATION_REASONS: readonly [RegExp, Reason][] = [
  [/item size|maximum allowed size|exceeds the maximum/i, REASONS.itemTooLarge],
  [/length less than or equal to 100|too many items|transactitems/i, REASONS.transactionTooLarge],
  [/multiple operations on one item/i, REASONS.transactionItemRepeated],
  [/nesting levels|nested levels/i, REASONS.nestingTooDeep],
];

/** The {@link RequestRejectedError} for a validation message of DynamoDB's, its reason the limit it names. */
export function requestRejected(message: string, cause?: unknown): RequestRejectedError {
  const reason = VALIDATION_REASONS.find(([pattern]) => pattern.test(message))?.[1] ?? REASONS.invalidRequest;
  return new RequestRejectedError(reason, `request rejected by the service: ${message}`, { cause });
}

/**
 * Turns anything thrown while processing a record into a {@link BallastError}. Unknown errors are
 * treated as transient: retrying a bug wastes a few receives, dropping a good message loses data.
 * A service's `ValidationException` is the exception: it is fatal ({@link RequestRejectedError}).
 */
export function classify(error: unknown): BallastError {
  if (error instanceof BallastError) return error;
  // The SDK has no class for it (DynamoDB declares none), so its name is all there is to match.
  if (error instanceof Error && error.name === 'ValidationException') return requestRejected(error.message, error);
  const message = error instanceof Error ? error.message : String(error);
  const reason = isRetryableAwsError(error) ? (isThrottle(error) ? REASONS.throttled : REASONS.dependencyUnavailable) : REASONS.unexpected;
  return new TransientError(reason, message, { cause: error });
}

function isThrottle(error: unknown): boolean {
  const name = error instanceof Error ? error.name : '';
  return /Throttl|ProvisionedThroughputExceeded|RequestLimitExceeded/.test(name) ||
    (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 429;
}
