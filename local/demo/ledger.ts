import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { accountKey } from '../../workloads/accounts/index.ts';
import { queueCounts } from '../../shared/queues/index.ts';

/**
 * A ledger workload whose correct end state is known exactly: `count` credits spread over
 * `accounts` accounts. Chaos tests and benchmarks send it, disturb the stack, and then compare every
 * balance with the ledger — any lost or doubled effect shows up as a mismatch.
 */
export async function sendCredits(options: { sqs: SQSClient; queueUrl: string; count: number; accounts: number; prefix: string }): Promise<Map<string, number>> {
  const expected = new Map<string, number>();
  for (let start = 0; start < options.count; start += 10) {
    const entries = Array.from({ length: Math.min(10, options.count - start) }, (_, i) => {
      const n = start + i;
      const accountId = `${options.prefix}-${n % options.accounts}`;
      const amount = 1 + (n % 97);
      expected.set(accountId, (expected.get(accountId) ?? 0) + amount);
      return { Id: String(i), MessageBody: JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: accountId, payload: { amount } })) };
    });
    const out = await options.sqs.send(new SendMessageBatchCommand({ QueueUrl: options.queueUrl, Entries: entries }));
    if ((out.Failed ?? []).length > 0) throw new Error(`could not send ${out.Failed?.length} credits: ${out.Failed?.[0]?.Message}`);
  }
  return expected;
}

/** Waits until the queue has nothing visible, in flight or delayed; returns the time it took. */
export async function drainQueue(sqs: SQSClient, queueUrl: string, timeoutMs: number): Promise<number> {
  const startedAtMs = Date.now();
  for (;;) {
    const depth = await queueCounts(sqs, queueUrl);
    if (depth.visible + depth.inFlight + depth.delayed === 0) return Date.now() - startedAtMs;
    if (Date.now() - startedAtMs > timeoutMs) throw new Error(`queue not drained after ${timeoutMs} ms: ${JSON.stringify(depth)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Accounts whose balance differs from the ledger (strongly consistent reads). */
export async function balanceMismatches(documents: DynamoDBDocumentClient, tableName: string, expected: ReadonlyMap<string, number>) {
  const mismatches: { accountId: string; expected: number; actual: number | undefined }[] = [];
  for (const [accountId, balance] of expected) {
    const out = await documents.send(new GetCommand({ TableName: tableName, Key: { pk: accountKey(accountId) }, ConsistentRead: true }));
    const actual = out.Item?.balance as number | undefined;
    if (actual !== balance) mismatches.push({ accountId, expected: balance, actual });
  }
  return mismatches;
}
