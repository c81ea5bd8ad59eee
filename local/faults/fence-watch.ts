/**
 * Watches the lock writes that reach DynamoDB through the fault proxy and checks the fence from
 * outside the code under test: once a newer holder's acquisition of a lock has been answered, no
 * write for an older acquisition of it (a commit's or an abandon's release, a heartbeat) may land.
 *
 * The idempotency store conditions each of those writes on its owner token and fence, so a holder
 * that stalled past its lease (a stalled request, a slow external call whose heartbeat came too
 * late) is refused. The watch sees both halves: writes refused for being stale (the fence at work)
 * and writes that landed although stale (the fence broken). It orders them by the proxy's ticks,
 * not by the clocks of the functions: a write forwarded after an acquisition was answered was
 * applied after it.
 */
import { unmarshall, type NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import { lockWriteOf, type LockWrite, type TransactItem } from '../../shared/lock/index.ts';
import type { DynamoDbExchange } from './dynamodb-proxy.ts';

/** What the watch saw, for the chaos run's report and its `staleLockWrites` invariant. */
export interface FenceReport {
  /** Lock acquisitions that landed. */
  readonly acquisitions: number;
  /** Writes for an acquisition older than one already answered, refused by their condition: the fence at work. */
  readonly staleWritesRefused: number;
  /** The same writes, landed: each a broken fence, described for the violation report. */
  readonly staleWritesApplied: readonly string[];
}

export interface FenceWatch {
  /** Feed it every answered exchange: {@link DynamoDbFaultProxyOptions.onAnswered}. */
  readonly observe: (exchange: DynamoDbExchange) => void;
  readonly report: () => FenceReport;
}

interface WireTransaction {
  readonly ClientRequestToken?: string;
  readonly TransactItems?: readonly { readonly Update?: { readonly Key?: unknown; readonly ExpressionAttributeValues?: unknown } }[];
}

export function fenceWatch(): FenceWatch {
  // Per resource, every acquisition that landed: its fence and the tick of its answer.
  const acquired = new Map<string, { fence: number; answeredAt: number }[]>();
  // A retry with a token the service already applied is answered without being applied again.
  const appliedTokens = new Set<string>();
  let acquisitions = 0;
  let staleWritesRefused = 0;
  const staleWritesApplied: string[] = [];

  /** The newest fence whose acquisition of `resourceId` was answered before tick `sentAt`. */
  const newestBefore = (resourceId: string, sentAt: number) =>
    Math.max(0, ...(acquired.get(resourceId) ?? []).filter((entry) => entry.answeredAt < sentAt).map((entry) => entry.fence));

  const observe = (exchange: DynamoDbExchange) => {
    if (exchange.operation !== 'TransactWriteItems') return;
    const request = exchange.request as WireTransaction | undefined;
    const writes = lockWritesOnWire(request);
    if (!writes.some(Boolean)) return;
    if (exchange.status === 200) {
      const token = request?.ClientRequestToken;
      if (token !== undefined && appliedTokens.has(token)) return;
      if (token !== undefined) appliedTokens.add(token);
      for (const write of writes) {
        if (!write) continue;
        if (write.kind === 'acquire') {
          acquisitions += 1;
          acquired.set(write.resourceId, [...(acquired.get(write.resourceId) ?? []), { fence: write.fence, answeredAt: exchange.answeredAt }]);
          continue;
        }
        const newer = newestBefore(write.resourceId, exchange.sentAt);
        if (newer > write.fence) staleWritesApplied.push(`${write.kind} of ${write.resourceId} for fence ${write.fence} landed after fence ${newer} had taken it`);
      }
      return;
    }
    const reasons = (exchange.answer as { CancellationReasons?: readonly { Code?: string }[] } | undefined)?.CancellationReasons ?? [];
    for (const [index, write] of writes.entries()) {
      if (!write || write.kind === 'acquire' || reasons[index]?.Code !== 'ConditionalCheckFailed') continue;
      if (newestBefore(write.resourceId, exchange.sentAt) > write.fence) staleWritesRefused += 1;
    }
  };

  return { observe, report: () => ({ acquisitions, staleWritesRefused, staleWritesApplied: [...staleWritesApplied] }) };
}

/**
 * A `TransactWriteItems` request body as sent, item by item: the lock write each item is, if any
 * (an array as long as its items).
 */
export function lockWritesOnWire(body: unknown): (LockWrite | undefined)[] {
  const items = (body as WireTransaction | undefined)?.TransactItems;
  return Array.isArray(items) ? items.map(lockWriteOnWire) : [];
}

/** A transaction item in DynamoDB's wire form, read as a lock write if it is one. */
function lockWriteOnWire(item: NonNullable<WireTransaction['TransactItems']>[number]): LockWrite | undefined {
  const update = item.Update;
  if (!update?.Key || !update.ExpressionAttributeValues) return undefined;
  const asDocument = (value: unknown) => unmarshall(value as Record<string, NativeAttributeValue>) as Record<string, unknown>;
  return lockWriteOf({ Update: { ...update, Key: asDocument(update.Key), ExpressionAttributeValues: asDocument(update.ExpressionAttributeValues) } } as TransactItem);
}
