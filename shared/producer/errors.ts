/**
 * Errors the producer SDK raises before or while sending. They are not {@link BallastError}s
 * (those classify a record inside the worker); they tell a producer what to fix, naming the job
 * (and, for job files, the line) at fault.
 */

export interface ProducerErrorOptions extends ErrorOptions {
  /** 1-based line of a JSON-lines input the error is about. */
  readonly line?: number;
  /** Structured facts for logs (never payload contents). */
  readonly context?: Record<string, unknown>;
}

/** Base of every producer error. */
export class ProducerError extends Error {
  static { this.prototype.name = 'ProducerError'; }
  readonly line: number | undefined;
  readonly context: Record<string, unknown>;

  constructor(message: string, options: ProducerErrorOptions = {}) {
    super(options.line === undefined ? message : `line ${options.line}: ${message}`, options);
    // Ours are named on their prototypes (minified bundles rename classes); a subclass of yours without a name is named by its class.
    if (!Object.hasOwn(new.target.prototype, 'name')) this.name = new.target.name;
    this.line = options.line;
    this.context = options.context ?? {};
  }
}

/** A job does not validate: unknown type, missing or malformed field, bad JSON. Nothing was sent. */
export class InvalidJobError extends ProducerError {
  static { this.prototype.name = 'InvalidJobError'; }
}

/** The message would exceed the queue's size limit. Nothing was sent for it. */
export class MessageTooLargeError extends ProducerError {
  static { this.prototype.name = 'MessageTooLargeError'; }
  readonly sizeBytes: number;
  readonly maxBytes: number;

  constructor(message: string, sizeBytes: number, maxBytes: number, options: ProducerErrorOptions = {}) {
    super(message, options);
    this.sizeBytes = sizeBytes;
    this.maxBytes = maxBytes;
  }
}

/** Options of a producer are invalid (names the field, the value and the fix). */
export class ProducerConfigurationError extends ProducerError {
  static { this.prototype.name = 'ProducerConfigurationError'; }
}
