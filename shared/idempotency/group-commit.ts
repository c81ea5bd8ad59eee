import { randomUUID } from 'node:crypto';
import type { CancellationReason, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { context, trace, type Context, type Span } from '@opentelemetry/api';
import { isRetryableAwsError } from '../errors/index.ts';
import type { TransactItem } from '../lock/index.ts';
import { CONTROL_TABLE } from '../tables/index.ts';
import { annotate, ATTRIBUTES } from '../tracing/index.ts';
import { marshallItems, MAX_TRANSACTION_ITEMS, sendTransaction } from './transact.ts';

/**
 * How many times a job may be cancelled for another job's sake (its own items all `None`) before
 * it is sent in a transaction of its own: a hot item met again and again must not hold it back.
 */
const MAX_INNOCENT_CANCELLATIONS = 5;

/** One job's commit waiting for a group: its items, and how to answer it. */
interface Member {
  readonly items: TransactWriteItem[];
  /** Identities of the DynamoDB items it writes (table + key): a group holds each item once. */
  readonly targets: readonly string[];
  /** The commit's span, active when it was enqueued: the size of the group that answered it goes on it. */
  readonly span: Span | undefined;
  /** The async context it was enqueued in: its group's request runs in its first member's. */
  readonly context: Context;
  readonly settle: (reasons: CancellationReason[] | undefined) => void;
  readonly fail: (error: unknown) => void;
  /** Times it was cancelled for another job's sake. */
  readonly cancelledFor: number;
  /** Whether other jobs wait for it (records behind it in its lane): such members group apart. */
  readonly hasFollowers: boolean;
}

/** How a commit joins a group. */
export interface GroupCommitOptions {
  /**
   * How many jobs wait for this one to settle (the records behind it in its batch lane). The
   * commits others wait on are grouped apart from those nothing waits on, so a duplicate or a
   * conflict among the lanes that end here no longer delays a lane that goes on. @default 0
   */
  readonly followers?: number;
}

/**
 * Group commit: the one-shot commits that the records of a batch start in the same turn of the
 * event loop (the head of every lane, typically) go to DynamoDB in one `TransactWriteItems` (two at
 * most, see below, or more past 100 items) instead of one each. Each job's items keep their own
 * conditions, so the group is all or nothing
 * and every job still commits exactly once; what changes is the per-request cost (signing,
 * serialization, a round trip), paid once per group rather than once per record.
 *
 * A job is answered by what its own items did:
 * - the group committed: committed;
 * - DynamoDB cancelled the group: the jobs whose items carry a reason (a duplicate, a refused
 *   business condition, a `TransactionConflict`, throttling) get their own reasons, as a
 *   transaction of their own would have; the jobs whose items were all `None` are sent again at
 *   once, in the next group (alone after {@link MAX_INNOCENT_CANCELLATIONS});
 * - DynamoDB refused the whole request for a reason that is not transient (a `ValidationException`
 *   such as the 4 MB limit, a missing table or a denied action of one workload): every job is sent
 *   again on its own, so only the one at fault fails;
 * - throttling, a 5xx or a dropped connection: every job's answer, as each alone would have met it.
 *
 * The commits other jobs wait on (the head of a lane that goes on) and those nothing waits on go in
 * two groups, sent side by side. A cancelled group costs its innocent jobs a round trip: in one
 * group, a duplicate among the lanes that end here would also hold back the next wave of every lane
 * that goes on, and with it the batch. Apart, that round trip overlaps the next wave. (Two groups,
 * not one per number of followers: on a few hot resources every lane goes on, and finer groups
 * would cost requests without shortening the batch.)
 *
 * A job whose items cannot be marshalled fails alone, before it joins a group. Two jobs writing one
 * item are never in flight together: the later waits for the group holding the item to settle
 * (DynamoDB refuses a transaction that writes an item twice, and cancels two at once on one item).
 * A group's request runs in the async context of its first job, so an instrumented SDK's span for
 * it appears under that job's commit span.
 */
export class GroupCommit {
  readonly #documents: DynamoDBDocumentClient;
  #pending: Member[] = [];
  /** Targets of the groups in flight. */
  readonly #held = new Set<string>();
  #scheduled = false;

  constructor(documents: DynamoDBDocumentClient) {
    this.#documents = documents;
  }

  /** Resolves undefined when `items` committed, or with their own cancellation reasons. */
  transact(items: readonly TransactItem[], options: GroupCommitOptions = {}): Promise<CancellationReason[] | undefined> {
    return new Promise((settle, fail) => {
      // A throw here (a value marshall refuses) rejects this job only.
      const marshalled = marshallItems(this.#documents, items);
      this.#enqueue({
        items: marshalled, targets: marshalled.map(targetOf), span: trace.getActiveSpan(), context: context.active(), settle, fail, cancelledFor: 0,
        hasFollowers: (options.followers ?? 0) > 0,
      });
    });
  }

  #enqueue(member: Member): void {
    this.#pending.push(member);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#pending.length === 0) return;
    this.#scheduled = true;
    // Once every commit started in this turn has joined (a batch's lanes reach theirs in the same
    // turn unless a job's plan awaited I/O), and before the next I/O is taken in.
    setImmediate(() => this.#flush());
  }

  /** Sends what is pending in groups; members touching an item in flight wait for it. */
  #flush(): void {
    this.#scheduled = false;
    const waiting: Member[] = [];
    const ready: Member[][] = [];
    // The group being filled for the members others wait on (key true), and the one for the rest.
    const open = new Map<boolean, { members: Member[]; items: number }>();
    for (const member of this.#pending) {
      if (member.targets.some((target) => this.#held.has(target))) {
        waiting.push(member);
        continue;
      }
      for (const target of member.targets) this.#held.add(target);
      if (member.cancelledFor >= MAX_INNOCENT_CANCELLATIONS) {
        ready.push([member]);
        continue;
      }
      let group = open.get(member.hasFollowers);
      if (group && group.items + member.items.length > MAX_TRANSACTION_ITEMS) {
        ready.push(group.members);
        group = undefined;
      }
      if (!group) open.set(member.hasFollowers, (group = { members: [], items: 0 }));
      group.members.push(member);
      group.items += member.items.length;
    }
    for (const group of open.values()) ready.push(group.members);
    this.#pending = waiting;
    for (const group of ready) {
      void context.with((group[0] as Member).context, () => this.#send(group))
        .catch((error: unknown) => group.forEach((member) => member.fail(error)))
        .finally(() => {
          for (const member of group) for (const target of member.targets) this.#held.delete(target);
          this.#schedule();
        });
    }
  }

  async #send(group: readonly Member[]): Promise<void> {
    if (group.length === 1) {
      const [member] = group as [Member];
      await sendTransaction(this.#documents, member.items).then(member.settle, member.fail);
      return;
    }
    let reasons: CancellationReason[] | undefined;
    try {
      reasons = await sendTransaction(this.#documents, group.flatMap((member) => member.items));
    } catch (error) {
      if (isRetryableAwsError(error)) for (const member of group) member.fail(error);
      else for (const member of group) this.#pending.push({ ...member, cancelledFor: MAX_INNOCENT_CANCELLATIONS });
      return;
    }
    let offset = 0;
    const innocent: Member[] = [];
    for (const member of group) {
      const own = reasons?.slice(offset, offset + member.items.length);
      offset += member.items.length;
      if (own?.every((reason) => (reason.Code ?? 'None') === 'None')) {
        innocent.push(member);
        continue;
      }
      annotate(member.span, () => ({ [ATTRIBUTES.commitGroupSize]: group.length }));
      member.settle(own);
    }
    // Cancelled for another job's sake. Every job innocent is an answer DynamoDB does not give:
    // each then goes alone.
    const everyone = innocent.length === group.length;
    for (const member of innocent) this.#pending.push({ ...member, cancelledFor: everyone ? MAX_INNOCENT_CANCELLATIONS : member.cancelledFor + 1 });
  }
}

/**
 * Which DynamoDB item a transaction item writes: its table and key. A Put names its key only
 * among its attributes; ballast's tables key on `pk`, and a Put without one is taken as unique
 * (should it share an item after all, DynamoDB refuses the group and its jobs go one by one).
 */
function targetOf(item: TransactWriteItem): string {
  const body = (item.Put ?? item.Update ?? item.Delete ?? item.ConditionCheck) as { TableName?: string; Key?: Record<string, unknown>; Item?: Record<string, unknown> };
  const key = body.Key ?? (body.Item?.[CONTROL_TABLE.partitionKey] === undefined ? undefined : { [CONTROL_TABLE.partitionKey]: body.Item[CONTROL_TABLE.partitionKey] });
  if (!key) return `\u0000unique\u0000${randomUUID()}`;
  // Attribute values are already in wire form ({ S: '…' }); names sorted, so any order names one item.
  return `${body.TableName}\u0000${JSON.stringify(Object.keys(key).sort().map((name) => [name, key[name]]))}`;
}
