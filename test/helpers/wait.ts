import type { SQSClient } from '@aws-sdk/client-sqs';
import { queueCounts } from '../../shared/queues/index.ts';

/**
 * Polls `condition` every `intervalMs` until it holds; throws after `timeoutMs`, naming `what`.
 * Every wait in the tests goes through here, so every wait is bounded.
 */
export async function waitFor(
  what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000, intervalMs = 25,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Waits, bounded, until nothing is left on the queue: no message visible, in flight or delayed. */
export async function waitForEmptyQueue(sqs: SQSClient, queueUrl: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(`${queueUrl} to drain`, async () => {
    const depth = await queueCounts(sqs, queueUrl);
    return depth.visible + depth.inFlight + depth.delayed === 0;
  }, timeoutMs, 250);
}
