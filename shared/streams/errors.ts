import { FatalError, REASONS, type BallastErrorOptions } from '../errors/index.ts';

/**
 * A message that should be a stream mapping's on-failure invocation record is not one (not JSON,
 * or no usable `DDBStreamBatchInfo`). Fatal: the same bytes can never describe a stream range.
 */
export class InvalidInvocationRecordError extends FatalError {
  static { this.prototype.name = 'InvalidInvocationRecordError'; }
  constructor(message: string, options?: BallastErrorOptions) {
    super(REASONS.invalidPayload, message, options);
  }
}
