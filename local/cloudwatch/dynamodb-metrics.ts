/**
 * DynamoDB's own metrics in `AWS/DynamoDB`, read off one request and its answer, since DynamoDB
 * Local publishes none. What each one counts, as DynamoDB defines it:
 *
 * - `SuccessfulRequestLatency` (TableName, Operation): the time the service took to answer a
 *   successful request, in milliseconds; one sample per table the request names.
 * - `ConsumedReadCapacityUnits` / `ConsumedWriteCapacityUnits` (TableName): the units the answer's
 *   `ConsumedCapacity` reports for each table (its indexes included). DynamoDB Local reckons them
 *   as the service does for single items, batches and `TransactGetItems` (double, for the two
 *   phases of a transaction); for `TransactWriteItems` (1.25.1) it reports, per table, about four
 *   units per KB of the largest item rather than two per KB of each item, so those are approximate.
 * - `SystemErrors` (TableName, Operation): a request answered with a 5xx.
 * - `ReadThrottleEvents` / `WriteThrottleEvents` (TableName): a request refused for throughput
 *   (`ProvisionedThroughputExceededException`, `ThrottlingException`, `RequestLimitExceeded`), one
 *   event per table it names (the service also counts one per index the write touched, which the
 *   answer does not tell).
 *
 * Only the item operations below are measured, as the service reports them; PartiQL statements
 * (which name their tables inside the statement) and table management are not.
 */
import type { MetricIdentity } from './series.ts';

/** Operations that read items, and so consume read units and count read throttles. */
const READ_OPERATIONS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan', 'TransactGetItems']);
/** Operations that write items; a `TransactWriteItems`'s condition checks included. */
const WRITE_OPERATIONS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
/** The `__type` names (after `#`) of the errors DynamoDB answers a throttled request with. */
const THROTTLING_ERRORS = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);
const TRANSACT_KINDS = ['Put', 'Update', 'Delete', 'ConditionCheck', 'Get'] as const;

/** One request to DynamoDB and its answer, as a proxy in front of it saw them. */
export interface DynamoDbExchange {
  /** From `X-Amz-Target`, e.g. `TransactWriteItems`. */
  readonly operation: string;
  /** The parsed request body. */
  readonly request: unknown;
  /** The answer's HTTP status. */
  readonly status: number;
  /** The parsed answer body (undefined if it was not JSON). */
  readonly response: unknown;
  /** From sending the request to holding the whole answer. */
  readonly latencyMs: number;
}

/** One value for one series, to be stamped by the caller's metric clock. */
export interface DynamoDbDatapoint {
  readonly identity: MetricIdentity;
  readonly value: number;
}

/** Whether DynamoDB reports metrics for `operation` (see the module's comment). */
export function isMeasuredOperation(operation: string): boolean {
  return READ_OPERATIONS.has(operation) || WRITE_OPERATIONS.has(operation);
}

/**
 * The request to send instead of `request` so the answer reports its consumed capacity, or
 * undefined when it already asks for it (the caller then sees exactly what it asked for either way:
 * see {@link withoutConsumedCapacity}). `TOTAL` is enough: a table's metric includes its indexes.
 */
export function askingConsumedCapacity(operation: string, request: unknown): Record<string, unknown> | undefined {
  if (!isMeasuredOperation(operation) || !isRecord(request)) return undefined;
  const asked = request.ReturnConsumedCapacity;
  return asked === undefined || asked === 'NONE' ? { ...request, ReturnConsumedCapacity: 'TOTAL' } : undefined;
}

/** An answer to a request rewritten by {@link askingConsumedCapacity}, as the unrewritten request would have had it. */
export function withoutConsumedCapacity(response: Record<string, unknown>): Record<string, unknown> {
  const { ConsumedCapacity: _reported, ...answer } = response;
  return answer;
}

/** Every datapoint one exchange gives, per the module's comment; none for operations DynamoDB does not measure. */
export function dynamoDbDatapoints(exchange: DynamoDbExchange): DynamoDbDatapoint[] {
  const { operation, status } = exchange;
  if (!isMeasuredOperation(operation)) return [];
  const tables = tablesOf(operation, exchange.request);
  const point = (name: string, dimensions: Record<string, string>, value: number): DynamoDbDatapoint =>
    ({ identity: { namespace: 'AWS/DynamoDB', name, dimensions }, value });
  if (status >= 500) return tables.map((TableName) => point('SystemErrors', { TableName, Operation: operation }, 1));
  if (status >= 400) {
    if (!THROTTLING_ERRORS.has(errorName(exchange.response))) return [];
    const name = READ_OPERATIONS.has(operation) ? 'ReadThrottleEvents' : 'WriteThrottleEvents';
    return tables.map((TableName) => point(name, { TableName }, 1));
  }
  const points = tables.map((TableName) => point('SuccessfulRequestLatency', { TableName, Operation: operation }, exchange.latencyMs));
  for (const consumed of consumedCapacities(exchange.response)) {
    const TableName = tableName(consumed.TableName);
    if (TableName === undefined) continue;
    // Transactions split their units by kind; otherwise the operation says which kind they are.
    const split = consumed.ReadCapacityUnits !== undefined || consumed.WriteCapacityUnits !== undefined;
    const [read, write] = split
      ? [units(consumed.ReadCapacityUnits), units(consumed.WriteCapacityUnits)]
      : READ_OPERATIONS.has(operation) ? [units(consumed.CapacityUnits), undefined] : [undefined, units(consumed.CapacityUnits)];
    if (read !== undefined) points.push(point('ConsumedReadCapacityUnits', { TableName }, read));
    if (write !== undefined) points.push(point('ConsumedWriteCapacityUnits', { TableName }, write));
  }
  return points;
}

/** The tables a request names, once each: a batch's keys, a transaction's items' tables, or its `TableName`. */
function tablesOf(operation: string, request: unknown): string[] {
  if (!isRecord(request)) return [];
  let names: unknown[] = [request.TableName];
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') names = isRecord(request.RequestItems) ? Object.keys(request.RequestItems) : [];
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    const items = Array.isArray(request.TransactItems) ? request.TransactItems : [];
    names = items.flatMap((item: unknown) => TRANSACT_KINDS.map((kind) => (isRecord(item) && isRecord(item[kind]) ? item[kind].TableName : undefined)));
  }
  return [...new Set(names.map(tableName).filter((name) => name !== undefined))];
}

/** A table's name, also when given as its ARN (`arn:aws:dynamodb:<region>:<account>:table/<name>`), as the metrics name it. */
function tableName(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  return value.startsWith('arn:') ? value.slice(value.indexOf(':table/') + ':table/'.length) : value;
}

interface ConsumedCapacity {
  readonly TableName?: unknown;
  readonly CapacityUnits?: unknown;
  readonly ReadCapacityUnits?: unknown;
  readonly WriteCapacityUnits?: unknown;
}

/** One entry per table: single-table operations answer one object, batches and transactions a list. */
function consumedCapacities(response: unknown): ConsumedCapacity[] {
  const reported = isRecord(response) ? response.ConsumedCapacity : undefined;
  return (Array.isArray(reported) ? reported : [reported]).filter(isRecord);
}

function units(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** The error's name as the SDK keys it: the part of `__type` after `#`. */
function errorName(response: unknown): string {
  const type = isRecord(response) && typeof response.__type === 'string' ? response.__type : '';
  return type.slice(type.lastIndexOf('#') + 1);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
