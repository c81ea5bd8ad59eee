import { creditCommand } from './credit-update.ts';
import { required, type Variant } from './types.ts';

/**
 * The floor with no protection at all: parse, one `UpdateItem`, report failures. Every
 * redelivery and producer duplicate is applied again.
 */
export const bare: Variant = ({ documents, env }) => {
  const table = required(env, 'STATE_TABLE_NAME');
  return async (event) => {
    const failed = await Promise.all(event.Records.map(async (record) => {
      try {
        const { resourceId, payload } = JSON.parse(record.body) as { resourceId: string; payload: { amount: number } };
        await documents.send(creditCommand(table, resourceId, payload.amount));
        return undefined;
      } catch {
        return record.messageId;
      }
    }));
    return { batchItemFailures: failed.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
  };
};
