/**
 * Watches the lock writes that reach DynamoDB through the fault proxy and checks the fence from
 * outside the code under test: every acquisition of a lock carries a greater fence than the ones
 * before it, and once a newer holder's acquisition has been answered, no write for an older
 * acquisition (a commit's or an abandon's release, a heartbeat) may land.
 *
 * The idempotency store conditions each of those writes on its owner token and fence, so a holder
 * that stalled past its lease (a stalled request, a slow external call whose heartbeat came too
 * late) is refused. The watch sees both halves: writes refused for being stale (the fence at work)
 * and writes that landed although stale (the fence broken). It orders them by the proxy's ticks,
 * not by the clocks of the functions: a write forwarded after an acquisition was answered was
 * applied after it. A write to a lock item in any other shape than the lock module's own is
 * reported too, since the watch could not judge it.
 *
 * It also checks the lease itself: a lock is taken only once its holder's lease has ended (or the
 * holder released it). The lease in force when an acquisition was applied is the one left by the
 * previous holder's writes (the highest fence below it) that DynamoDB may have applied last; the
 * acquisition is a live takeover only if every such write left a lease that ends after the proxy
 * forwarded it (on this machine's clock, which the functions' leases are written in). The fence
 * keeps a live takeover from corrupting anything, so no other check sees one: it shows a lease
 * that does not exclude.
 */
import { parseJsonBody } from '../http.ts';
import { lockKey, lockWriteOf, type LockWrite } from '../../shared/lock/index.ts';
import { CONTROL_TABLE } from '../../shared/tables/index.ts';
import type { DynamoDbExchange } from './dynamodb-proxy.ts';

/** What the watch saw, for the chaos run's report and its `staleLockWrites` invariant. */
export interface FenceReport {
  /** Lock acquisitions that landed. */
  readonly acquisitions: number;
  /** Writes for an acquisition older than one already answered, refused by their condition: the fence at work. */
  readonly staleWritesRefused: number;
  /** Lock writes that landed against the fence, or in a shape the watch cannot judge: each described for the violation report. */
  readonly staleWritesApplied: readonly string[];
  /** Acquisitions that landed while the previous holder's lease was still running: each described. */
  readonly liveTakeovers: readonly string[];
}

export interface FenceWatch {
  /** Feed it every answered exchange: {@link DynamoDbFaultProxyOptions.onAnswered}. */
  readonly observe: (exchange: DynamoDbExchange) => void;
  readonly report: () => FenceReport;
  /** The fence of the newest acquisition of `resourceId` that landed so far (0: none). */
  readonly newestFence: (resourceId: string) => number;
}

/** A lock item's key, as the lock module writes it (`lock#<resource>`). */
const LOCK_PREFIX = lockKey('');
const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

type WireValue = { readonly S?: string; readonly N?: string };
type WireItem = Readonly<Record<string, { readonly Key?: Record<string, WireValue>; readonly Item?: Record<string, WireValue>; readonly UpdateExpression?: string; readonly ExpressionAttributeValues?: Record<string, WireValue> } | undefined>>;
interface WireTransaction {
  readonly ClientRequestToken?: string;
  readonly TransactItems?: readonly WireItem[];
}

/** A lock item written in a shape the lock module does not make. */
interface ForeignWrite {
  readonly kind: 'foreign';
  readonly key: string;
  readonly how: string;
}

/** A lock write that landed, with when the proxy forwarded and answered it. */
interface Landed {
  readonly write: LockWrite;
  readonly sentAt: number;
  readonly answeredAt: number;
  readonly sentAtMs: number;
}

export function fenceWatch(): FenceWatch {
  // Per resource, every acquisition that landed: its fence and the tick of its answer.
  const acquired = new Map<string, { fence: number; answeredAt: number }[]>();
  // Per resource, every lock write that landed (each sets the lease), for the takeover check at the end.
  const leases = new Map<string, Landed[]>();
  // A retry with a token the service already applied is answered without being applied again.
  const appliedTokens = new Set<string>();
  const refusedTokens = new Set<string>();
  let acquisitions = 0;
  let staleWritesRefused = 0;
  const staleWritesApplied: string[] = [];

  /** The newest fence whose acquisition of `resourceId` was answered before tick `sentAt`. */
  const newestBefore = (resourceId: string, sentAt: number) =>
    Math.max(0, ...(acquired.get(resourceId) ?? []).filter((entry) => entry.answeredAt < sentAt).map((entry) => entry.fence));

  const landed = (write: LockWrite | ForeignWrite, sentAt: number, answeredAt: number, sentAtMs: number) => {
    if (write.kind === 'foreign') {
      staleWritesApplied.push(`${write.how} of ${write.key}: a lock write the lock module does not make, which the fence watch cannot judge`);
      return;
    }
    const writes = leases.get(write.resourceId) ?? [];
    writes.push({ write, sentAt, answeredAt, sentAtMs });
    leases.set(write.resourceId, writes);
    const newer = newestBefore(write.resourceId, sentAt);
    if (write.kind === 'acquire') {
      acquisitions += 1;
      acquired.set(write.resourceId, [...(acquired.get(write.resourceId) ?? []), { fence: write.fence, answeredAt }]);
      if (newer >= write.fence) staleWritesApplied.push(`acquire of ${write.resourceId} with fence ${write.fence} landed after fence ${newer}: the fence did not grow`);
      return;
    }
    if (newer > write.fence) staleWritesApplied.push(`${write.kind} of ${write.resourceId} for fence ${write.fence} landed after fence ${newer} had taken it`);
  };

  const observe = (exchange: DynamoDbExchange) => {
    if (SINGLE_WRITES.has(exchange.operation)) {
      const key = keyOf((exchange.request ?? {}) as NonNullable<WireItem[string]>);
      if (exchange.status === 200 && key?.startsWith(LOCK_PREFIX)) landed({ kind: 'foreign', key, how: exchange.operation }, exchange.sentAt, exchange.answeredAt, exchange.sentAtMs);
      return;
    }
    if (exchange.operation !== 'TransactWriteItems') return;
    const request = exchange.request as WireTransaction | undefined;
    const writes = (request?.TransactItems ?? []).map(lockWriteOnWire);
    if (!writes.some(Boolean)) return;
    const token = request?.ClientRequestToken;
    if (exchange.status === 200) {
      if (token !== undefined && appliedTokens.has(token)) return;
      if (token !== undefined) appliedTokens.add(token);
      for (const write of writes) if (write) landed(write, exchange.sentAt, exchange.answeredAt, exchange.sentAtMs);
      return;
    }
    // A refusal sent again with its token (its answer lost) is one refusal.
    if (token !== undefined && refusedTokens.has(token)) return;
    const answer = parseJsonBody(exchange.answerBody) as { CancellationReasons?: readonly { Code?: string }[] } | undefined;
    const reasons = answer?.CancellationReasons ?? [];
    let refused = false;
    for (const [index, write] of writes.entries()) {
      if (!write || write.kind === 'acquire' || write.kind === 'foreign' || reasons[index]?.Code !== 'ConditionalCheckFailed') continue;
      if (newestBefore(write.resourceId, exchange.sentAt) > write.fence) {
        staleWritesRefused += 1;
        refused = true;
      }
    }
    if (refused && token !== undefined) refusedTokens.add(token);
  };

  const newestFence = (resourceId: string) => Math.max(0, ...(acquired.get(resourceId) ?? []).map((entry) => entry.fence));

  return { observe, newestFence, report: () => ({ acquisitions, staleWritesRefused, staleWritesApplied: [...staleWritesApplied], liveTakeovers: [...leases.values()].flatMap(liveTakeovers) }) };
}

/**
 * The acquisitions among one lock's landed writes that took it while the lease was live. Every
 * write that landed for a lower fence than an acquisition A was applied before A (after A its
 * condition fails: a landed one is a `staleLockWrites` violation), so the lease in force when A
 * applied was left by the holder just before it, the highest such fence: by the last of its writes,
 * which is any of them not certainly followed by another of them (sent after it was answered). A
 * is a live takeover if every such write left a lease ending after A was forwarded.
 */
function liveTakeovers(writes: readonly Landed[]): string[] {
  const found: string[] = [];
  for (const taking of writes) {
    if (taking.write.kind !== 'acquire') continue;
    const previousFence = Math.max(-Infinity, ...writes.filter((other) => other.write.fence < taking.write.fence).map((other) => other.write.fence));
    const previous = writes.filter((other) => other.write.fence === previousFence);
    const maybeLast = previous.filter((write) => !previous.some((later) => later.sentAt > write.answeredAt));
    if (maybeLast.length === 0) continue;
    const held = maybeLast.reduce((shortest, write) => (write.write.leaseUntilMs < shortest.write.leaseUntilMs ? write : shortest));
    if (held.write.leaseUntilMs > taking.sentAtMs) {
      found.push(`acquire of ${taking.write.resourceId} with fence ${taking.write.fence} sent ${held.write.leaseUntilMs - taking.sentAtMs} ms before the lease of fence ${held.write.fence} ended`);
    }
  }
  return found;
}

/**
 * A `TransactWriteItems` request body as sent, item by item: the lock write each item is, if it
 * is one the lock module makes (an array as long as its items). Reads the wire form directly
 * (the key and the fence), so the proxy's hot path converts nothing it does not need.
 */
export function lockWritesOnWire(body: unknown): (LockWrite | undefined)[] {
  const items = (body as WireTransaction | undefined)?.TransactItems;
  return Array.isArray(items) ? items.map((item) => {
    const write = lockWriteOnWire(item);
    return write?.kind === 'foreign' ? undefined : write;
  }) : [];
}

/** One transaction item: a lock write, a write to a lock item in another shape, or neither. */
function lockWriteOnWire(item: WireItem): LockWrite | ForeignWrite | undefined {
  const [how, operation] = Object.entries(item)[0] ?? [];
  if (!how || !operation || how === 'ConditionCheck') return undefined;
  const key = keyOf(operation);
  if (!key?.startsWith(LOCK_PREFIX)) return undefined;
  const values = operation.ExpressionAttributeValues;
  const numbers = { ':fence': Number(values?.[':fence']?.N), ...(values?.[':lease'] ? { ':lease': Number(values[':lease'].N) } : {}) };
  const write = how === 'Update'
    ? lockWriteOf({ Update: { TableName: '', Key: { [CONTROL_TABLE.partitionKey]: key }, UpdateExpression: operation.UpdateExpression, ExpressionAttributeValues: numbers } })
    : undefined;
  return write ?? { kind: 'foreign', key, how };
}

/** The item's partition key on the control table, on the wire: from its Key, or from the Item of a Put. */
function keyOf(operation: NonNullable<WireItem[string]>): string | undefined {
  return (operation.Key ?? operation.Item)?.[CONTROL_TABLE.partitionKey]?.S;
}
