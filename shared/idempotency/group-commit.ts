import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { trace, type Span } from '@opentelemetry/api';
import type { TransactItem } from '../lock/index.ts';
import { CONTROL_TABLE } from '../tables/index.ts';
import { annotate, ATTRIBUTES } from '../tracing/index.ts';
import { transactWrite } from './transact.ts';

/** DynamoDB's limit on the items of one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;

/** One job's commit waiting for the next group: its items, and how to answer it. */
interface Member {
  readonly items: readonly TransactItem[];
  /** Identities of the DynamoDB items it writes (table + key): a group holds each item once. */
  readonly targets: readonly string[];
  /** The commit's span, active when it was enqueued: the group's size is stamped on it. */
  readonly span: Span | undefined;
  readonly settle: (reasons: CancellationReason[] | undefined) => void;
  readonly fail: (error: unknown) => void;
}

/**
 * Group commit: the one-shot commits that the records of a batch start in the same turn of the
 * event loop (the head of every lane, typically) go to DynamoDB as ONE `TransactWriteItems`
 * instead of one each. Each job's items keep their own conditions, so the group is all or nothing
 * and every job still commits exactly once; what changes is the per-request cost (signing,
 * serialization, a round trip), paid once per group rather than once per record.
 *
 * When DynamoDB cancels the group, its cancellation reasons say item by item which job caused it:
 * those jobs are answered with their own reasons (a duplicate, a refused business condition, a
 * conflict), exactly as a transaction of their own would have answered them; the jobs whose items
 * were all innocent (`None`) are sent again at once, in the next group. A request DynamoDB refuses
 * as a whole (`ValidationException`: two jobs writing one item, the 4 MB limit) is sent again job
 * by job; any other error (throttling, a dropped connection) is every member's answer.
 */
export class GroupCommit {
  readonly #documents: DynamoDBDocumentClient;
  #pending: Member[] = [];
  #scheduled = false;

  constructor(documents: DynamoDBDocumentClient) {
    this.#documents = documents;
  }

  /** Resolves undefined when `items` committed, or with their own cancellation reasons. */
  transact(items: readonly TransactItem[]): Promise<CancellationReason[] | undefined> {
    return new Promise((settle, fail) => {
      this.#enqueue({ items, targets: items.map(targetOf), span: trace.getActiveSpan(), settle, fail });
    });
  }

  #enqueue(member: Member): void {
    this.#pending.push(member);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // After every commit the current turn starts (lanes reach their commits in the same turn
    // unless a job's plan awaited I/O), before the next I/O is taken in.
    setImmediate(() => {
      this.#scheduled = false;
      const pending = this.#pending;
      this.#pending = [];
      for (const group of groups(pending)) void this.#send(group);
    });
  }

  async #send(group: readonly Member[]): Promise<void> {
    if (group.length === 1) {
      const [member] = group as [Member];
      await transactWrite(this.#documents, member.items).then(member.settle, member.fail);
      return;
    }
    for (const member of group) annotate(member.span, () => ({ [ATTRIBUTES.commitGroupSize]: group.length }));
    let reasons: CancellationReason[] | undefined;
    try {
      reasons = await transactWrite(this.#documents, group.flatMap((member) => member.items));
    } catch (error) {
      if ((error as { name?: string }).name === 'ValidationException') for (const member of group) void this.#send([member]);
      else for (const member of group) member.fail(error);
      return;
    }
    if (!reasons) {
      for (const member of group) member.settle(undefined);
      return;
    }
    let offset = 0;
    const innocent: Member[] = [];
    for (const member of group) {
      const own = reasons.slice(offset, offset + member.items.length);
      offset += member.items.length;
      if (own.some((reason) => (reason.Code ?? 'None') !== 'None')) member.settle(own);
      else innocent.push(member);
    }
    // Every member innocent would mean reasons DynamoDB does not give: each goes alone then.
    if (innocent.length === group.length) for (const member of innocent) void this.#send([member]);
    else for (const member of innocent) this.#enqueue(member);
  }
}

/**
 * The pending commits in groups, in arrival order: a member joins the current group unless that
 * would pass the item limit or write an item the group already writes (DynamoDB refuses a
 * transaction that touches one item twice).
 */
function groups(pending: readonly Member[]): Member[][] {
  const out: Member[][] = [];
  let current: Member[] = [];
  let items = 0;
  let targets = new Set<string>();
  for (const member of pending) {
    const overlaps = member.targets.some((target) => targets.has(target));
    if (current.length > 0 && (overlaps || items + member.items.length > MAX_TRANSACTION_ITEMS)) {
      out.push(current);
      current = [];
      items = 0;
      targets = new Set();
    }
    current.push(member);
    items += member.items.length;
    for (const target of member.targets) targets.add(target);
  }
  if (current.length > 0) out.push(current);
  return out;
}

let unknownTargets = 0;

/**
 * Which DynamoDB item a transaction item writes: its table and key. A Put names its key only
 * among its attributes; ballast's tables key on `pk`, and a Put without one is taken as unique
 * (should it share an item after all, DynamoDB refuses the group and its jobs go one by one).
 */
function targetOf(item: TransactItem): string {
  const [, body] = Object.entries(item)[0] as [string, { TableName?: string; Key?: Record<string, unknown>; Item?: Record<string, unknown> }];
  if (body.Key) return `${body.TableName}\u0000${JSON.stringify(body.Key)}`;
  const pk = body.Item?.[CONTROL_TABLE.partitionKey];
  return pk === undefined ? `\u0000unknown${(unknownTargets += 1)}` : `${body.TableName}\u0000${JSON.stringify({ [CONTROL_TABLE.partitionKey]: pk })}`;
}
