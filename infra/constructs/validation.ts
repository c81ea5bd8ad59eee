import type { IConstruct } from 'constructs';
import type { Duration } from 'aws-cdk-lib';

/** Thrown at synth time when props cannot deploy or break a ballast rule. */
export class BallastConfigError extends Error {
  constructor(scope: IConstruct, message: string) {
    super(`${scope.node.path}: ${message}`);
    this.name = 'BallastConfigError';
  }
}

/**
 * A completed job must stay remembered for as long as any copy of its message can still arrive:
 * through the queue, then the DLQ, then a replay. Otherwise a late duplicate runs again.
 */
export function checkIdempotencyWindow(
  scope: IConstruct,
  windows: { idempotencyRetention: Duration; queueRetention: Duration; deadLetterRetention: Duration; replayWindow: Duration },
): void {
  const neededSeconds = windows.queueRetention.toSeconds() + windows.deadLetterRetention.toSeconds() + windows.replayWindow.toSeconds();
  if (windows.idempotencyRetention.toSeconds() < neededSeconds) {
    throw new BallastConfigError(scope, `idempotency retention (${windows.idempotencyRetention.toDays({ integral: false })} days) is shorter than `
      + `queue retention + DLQ retention + replay window (${windows.queueRetention.toDays({ integral: false })} + `
      + `${windows.deadLetterRetention.toDays({ integral: false })} + ${windows.replayWindow.toDays({ integral: false })} = `
      + `${neededSeconds / 86_400} days): raise idempotencyRetention to at least ${Math.ceil(neededSeconds / 86_400)} days or shorten the retentions.`);
  }
}
