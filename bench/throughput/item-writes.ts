/**
 * How many item writes a DynamoDB request asks for: one per `TransactWriteItems` entry (a
 * `ConditionCheck` too: DynamoDB reads and locks its item like the others), one per
 * `BatchWriteItem` request, one for a `PutItem`, `UpdateItem` or `DeleteItem`, none for a read.
 * Counted whatever the answer: a refused or cancelled write is still work DynamoDB did (it read
 * each item to check its condition, and DynamoDB Local spends about as much CPU cancelling a
 * transaction as committing it), and a round trip the job waited for.
 */
export function itemWritesOf(command: string, input: Record<string, unknown>): number {
  switch (command) {
    case 'TransactWriteItemsCommand':
      return Array.isArray(input.TransactItems) ? input.TransactItems.length : 0;
    case 'BatchWriteItemCommand':
      return Object.values((input.RequestItems ?? {}) as Record<string, unknown[]>).reduce((sum, requests) => sum + requests.length, 0);
    case 'PutItemCommand':
    case 'UpdateItemCommand':
    case 'DeleteItemCommand':
      return 1;
    default:
      return 0;
  }
}
