import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { creditUpdate } from './credit-update.ts';
import { required, type Variant } from './types.ts';

/**
 * What an engineer would write by hand for exactly-once credits: one `TransactWriteItems` per
 * record, a `Put` of the idempotency record (refused if it exists) with the account's `Update`.
 * A refused `Put` is a duplicate. No payload hash, no lanes, no DLQ reasons, no metrics.
 */
export const transaction: Variant = ({ documents, env }) => {
  const state = required(env, 'STATE_TABLE_NAME');
  const control = required(env, 'CONTROL_TABLE_NAME');
  return async (event) => {
    const failed = await Promise.all(event.Records.map(async (record) => {
      try {
        const { idempotencyKey, resourceId, payload } = JSON.parse(record.body) as { idempotencyKey: string; resourceId: string; payload: { amount: number } };
        await documents.send(new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: control, Item: { pk: `idem#${idempotencyKey}`, status: 'COMPLETED' }, ConditionExpression: 'attribute_not_exists(pk)' } },
            { Update: creditUpdate(state, resourceId, payload.amount) },
          ],
        }));
        return undefined;
      } catch (error) {
        if (error instanceof TransactionCanceledException && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return undefined;
        return record.messageId;
      }
    }));
    return { batchItemFailures: failed.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
  };
};
