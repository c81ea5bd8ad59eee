/**
 * How the idempotency store names a cancelled transaction it cannot pin on a condition: by what
 * DynamoDB said, never as a lock that was not held.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DynamoDBClient, TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { FatalError, REASONS, TransientError } from '../../shared/errors/index.ts';
import { IdempotencyStore, type CommitPlan } from '../../shared/idempotency/index.ts';

/** A store whose every transaction DynamoDB cancels with `reasons`. */
function cancellingStore(reasons: (items: number) => CancellationReason[]) {
  const client = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });
  client.middlewareStack.add(() => async (args) => {
    const items = ((args.input as { TransactItems?: unknown[] }).TransactItems ?? []).length;
    throw new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: reasons(items) });
  }, { step: 'initialize', name: 'cancelEveryTransaction' });
  return { client, store: new IdempotencyStore({ documents: DynamoDBDocumentClient.from(client), tableName: 'control', groupCommits: false }) };
}

const job = createEnvelope({ type: 'thing.touch', resourceId: 'thing-1', payload: {}, idempotencyKey: 'touch-1' });
const plan: CommitPlan = {
  writes: [{
    item: { Update: { TableName: 'state', Key: { pk: 'thing#thing-1' }, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': 1 } } },
    onConditionFailed: () => new FatalError('invalid-request', 'not expected here: no condition failed'),
  }],
};

describe('idempotency store: cancellations it cannot explain', () => {
  for (const [code, reason] of [['ItemCollectionSizeLimitExceeded', REASONS.transactionCancelled], ['TransactionConflict', REASONS.transactionConflict], ['ThrottlingError', REASONS.throttled]] as const) {
    it(`a commit cancelled with ${code} on an item and no failed condition is ${reason}, with the codes`, async () => {
      const { client, store } = cancellingStore((items) => Array.from({ length: items }, (_, i) => ({ Code: i === items - 1 ? code : 'None' })));
      try {
        await assert.rejects(store.commitOnce(job, plan), (error: unknown) => {
          assert.ok(error instanceof TransientError, String(error));
          assert.equal(error.reason, reason);
          assert.deepEqual(error.context.cancellationCodes, ['None', code]);
          return true;
        });
      } finally {
        client.destroy();
      }
    });
  }
});
