import type { SpanRecord } from '../../shared/operations/trace-model.ts';
import { ATTRIBUTES, SPANS } from '../../shared/tracing/names.ts';
import type { ObservedRead } from './readers.ts';

/** An invalidation that ran: the tombstone of `version` written, at the end of its span. */
export interface FinishedInvalidation {
  readonly entity: string;
  readonly id: string;
  readonly version: number;
  readonly endedAtMs: number;
}

export interface StaleReadsReport {
  /** Reads sent after an invalidation of their item had finished: the ones the promise constrains. */
  readonly checked: number;
  /** One line per read answered older than such an invalidation. */
  readonly stale: readonly string[];
}

/**
 * How long after an invalidation's span ended a read must have been sent to be held to it. The
 * span's end and the reader's send time are read in different threads of one process (an SDK span
 * is anchored to `Date.now()` when it starts), so they agree to about a millisecond; the margin
 * keeps a read sent in the same instant out of the check rather than calling it stale.
 */
export const CLOCK_MARGIN_MS = 10;

/** The invalidations a trace's spans show finished: tombstone spans that did not fail. */
export function finishedInvalidations(spans: readonly SpanRecord[]): FinishedInvalidation[] {
  return spans.flatMap((span) => {
    if (span.name !== SPANS.tombstone || span.status.code === 'ERROR') return [];
    const { [ATTRIBUTES.entity]: entity, [ATTRIBUTES.entityId]: id, [ATTRIBUTES.version]: version } = span.attributes;
    if (entity === undefined || id === undefined || typeof version !== 'number') return [];
    return [{ entity: String(entity), id: String(id), version, endedAtMs: span.endEpochMs }];
  });
}

/**
 * The cache's promise, checked against what readers were answered: once a commit's invalidation
 * has run, no read returns an older version (a hit, a fill's miss, a bypass to the table alike).
 * A read sent while an invalidation was still running may see either side, so only invalidations
 * finished {@link CLOCK_MARGIN_MS} before the read was sent hold it. A not-found answer is held to
 * nothing: the cache stores no absence (a miss reads the table), and a deletion's invalidation is
 * in no job's trace (its stream record carries no writer's context), so the check could not tell
 * a stale not-found from a fresh one.
 */
export function findStaleReads(
  reads: readonly ObservedRead[], invalidations: readonly FinishedInvalidation[], marginMs = CLOCK_MARGIN_MS,
): StaleReadsReport {
  // Per item: its invalidations in the order they finished, each with the newest version finished by then.
  const byItem = new Map<string, { endedAtMs: number; newest: number; newestEndedAtMs: number }[]>();
  const itemOf = (entity: string, id: string) => `${entity}\u0000${id}`;
  const grouped = Map.groupBy(invalidations, (invalidation) => itemOf(invalidation.entity, invalidation.id));
  for (const [item, list] of grouped) {
    let newest = 0;
    let newestEndedAtMs = 0;
    byItem.set(item, list.toSorted((a, b) => a.endedAtMs - b.endedAtMs).map((invalidation) => {
      if (invalidation.version > newest) [newest, newestEndedAtMs] = [invalidation.version, invalidation.endedAtMs];
      return { endedAtMs: invalidation.endedAtMs, newest, newestEndedAtMs };
    }));
  }
  let checked = 0;
  const stale: string[] = [];
  for (const read of reads) {
    if (read.version === 0) continue;
    const finished = byItem.get(itemOf(read.entity, read.id)) ?? [];
    const last = lastAtOrBefore(finished, read.sentAtMs - marginMs);
    if (!last) continue;
    checked += 1;
    if (read.version < last.newest) {
      stale.push(`${read.entity} ${read.id}: answered v${read.version} (${read.source}) ${read.sentAtMs - last.newestEndedAtMs} ms after the invalidation of v${last.newest} had finished`);
    }
  }
  return { checked, stale };
}

/** The last entry that ended at or before `atMs` (the list is in end order). */
function lastAtOrBefore<T extends { readonly endedAtMs: number }>(list: readonly T[], atMs: number): T | undefined {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((list[middle] as T).endedAtMs <= atMs) low = middle + 1;
    else high = middle;
  }
  return list[low - 1];
}
