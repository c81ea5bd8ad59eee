/**
 * What an SDK request asks of IAM: the actions and resource ARNs AWS authorizes it as, one call per
 * resource it touches (a transaction writing two tables is authorized on each). Read from the wire
 * (the `X-Amz-Target` operation and the JSON body), so the local cloud authorizes exactly what the
 * code sent, whichever client sent it.
 */
import { dynamoDbOperation } from '../engines/index.ts';

/** One authorization AWS makes for a request. */
export interface RequestedCall {
  /** `dynamodb:GetItem`, `sqs:SendMessage`, ... */
  readonly action: string;
  readonly resource: string;
}

/** Where the calls' ARNs point: the local cloud's region and account id. */
export interface ArnScope {
  readonly region: string;
  readonly accountId: string;
}

type Body = Record<string, unknown> | undefined;

const tableArn = (scope: ArnScope, table: unknown) => `arn:aws:dynamodb:${scope.region}:${scope.accountId}:table/${String(table)}`;

/** `Put` in a transaction is authorized as `PutItem`, and so on. */
const TRANSACT_ACTIONS: Readonly<Record<string, string>> = {
  Put: 'dynamodb:PutItem', Update: 'dynamodb:UpdateItem', Delete: 'dynamodb:DeleteItem', ConditionCheck: 'dynamodb:ConditionCheckItem', Get: 'dynamodb:GetItem',
};

/**
 * A DynamoDB request's calls: its operation on its table (or index: a `Query`/`Scan` with
 * `IndexName` is authorized on `table/<name>/index/<index>`); a transaction's items each as its
 * own item action on its table; a batch's tables each with the batch action. An operation that
 * names no table (`ListTables`) is authorized on `*`.
 */
export function dynamoDbCalls(operation: string, body: Body, scope: ArnScope): RequestedCall[] {
  const action = `dynamodb:${operation}`;
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    const items = Array.isArray(body?.TransactItems) ? (body.TransactItems as Record<string, { TableName?: unknown } | undefined>[]) : [];
    return unique(items.flatMap((item) => Object.entries(item).map(([kind, inner]) => ({ action: TRANSACT_ACTIONS[kind] ?? action, resource: tableArn(scope, inner?.TableName) }))));
  }
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
    const tables = Object.keys((body?.RequestItems as Record<string, unknown> | undefined) ?? {});
    return tables.map((table) => ({ action, resource: tableArn(scope, table) }));
  }
  if (body?.TableName === undefined) return [{ action, resource: '*' }];
  const table = tableArn(scope, body.TableName);
  return [{ action, resource: typeof body.IndexName === 'string' ? `${table}/index/${body.IndexName}` : table }];
}

/** The operation of a DynamoDB request, from its `X-Amz-Target`. */
export { dynamoDbOperation };

/** `AmazonSQS.SendMessage` → `SendMessage`. */
export function sqsOperation(target: string | string[] | undefined): string | undefined {
  const value = Array.isArray(target) ? target[0] : target;
  return value?.startsWith('AmazonSQS.') ? value.slice('AmazonSQS.'.length) : undefined;
}

/** SQS actions whose name differs from the operation's: a batch is authorized as its single form. */
const SQS_BATCH_ACTIONS: Readonly<Record<string, string>> = {
  SendMessageBatch: 'sqs:SendMessage', DeleteMessageBatch: 'sqs:DeleteMessage', ChangeMessageVisibilityBatch: 'sqs:ChangeMessageVisibility',
};

/**
 * An SQS request's call (JSON protocol): its operation on the queue its `QueueUrl` (or, for
 * `GetQueueUrl`/`CreateQueue`, its `QueueName`) names; `ListQueues` on `*`.
 */
export function sqsCalls(operation: string, body: Body, scope: ArnScope): RequestedCall[] {
  const action = SQS_BATCH_ACTIONS[operation] ?? `sqs:${operation}`;
  const name = typeof body?.QueueUrl === 'string' ? body.QueueUrl.split('/').at(-1) : typeof body?.QueueName === 'string' ? body.QueueName : undefined;
  return [{ action, resource: name ? `arn:aws:sqs:${scope.region}:${scope.accountId}:${name}` : '*' }];
}

function unique(calls: RequestedCall[]): RequestedCall[] {
  const seen = new Set<string>();
  return calls.filter((call) => !seen.has(`${call.action} ${call.resource}`) && Boolean(seen.add(`${call.action} ${call.resource}`)));
}
