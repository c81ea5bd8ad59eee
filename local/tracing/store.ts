import { ATTRIBUTES, SPANS } from '../../shared/tracing/names.ts';
import { normalizeTraceId, type RecentJob, type SpanRecord, type TraceMatch, type TraceQueryResult, type TraceView } from '../../shared/operations/trace-model.ts';

export interface SpanStoreOptions {
  /**
   * Traces kept at most; past it, the trace updated least recently is dropped, with its index entries.
   * @default 10_000
   */
  readonly maxTraces?: number;
  /**
   * Spans kept at most per trace; later ones are counted, not kept.
   * @default 2_000
   */
  readonly maxSpansPerTrace?: number;
  /**
   * Reads of one write returned with its trace at most (the earliest; all are counted).
   * @default 5
   */
  readonly maxReadsPerTrace?: number;
}

const defaults = { maxTraces: 10_000, maxSpansPerTrace: 2_000, maxReadsPerTrace: 5 } as const;

/** The keys one trace is indexed under, so dropping it removes exactly its entries. */
interface StoredTrace {
  readonly spans: SpanRecord[];
  readonly spanIds: Set<string>;
  readonly jobIds: Set<string>;
  readonly idempotencyKeys: Set<string>;
  /** The traces its reads name as their write's. */
  readonly writeTraceIds: Set<string>;
  droppedSpans: number;
}

/**
 * The local cloud's spans, in memory and bounded: whole traces, indexed by trace id, by the job id
 * and idempotency key their spans carry (`ballast.job.id`, `ballast.idempotency_key`), and by the
 * write a read served (`ballast.write.trace_id`), so a job's trace comes with the reads of what it
 * committed. A span arriving twice (a re-posted batch) is kept once.
 *
 * @example
 * const store = new SpanStore({ maxTraces: 1_000 });
 * store.add(spans);
 * const { traces } = store.query('job-42');
 */
export class SpanStore {
  readonly options: Required<SpanStoreOptions>;
  /** In order of last update: the first is the next dropped. */
  readonly #traces = new Map<string, StoredTrace>();
  readonly #byJobId = new Map<string, Set<string>>();
  readonly #byIdempotencyKey = new Map<string, Set<string>>();
  /** Write trace id → the traces holding reads that name it. */
  readonly #readsOf = new Map<string, Set<string>>();

  constructor(options: SpanStoreOptions = {}) {
    this.options = { ...defaults, ...options };
    for (const [name, value] of Object.entries(this.options)) {
      if (!Number.isInteger(value) || value < 1) throw new Error(`SpanStore: ${name} must be an integer >= 1, got ${value}`);
    }
  }

  /** Traces held now. */
  get traceCount(): number {
    return this.#traces.size;
  }

  /** Adds finished spans (any traces, any order). */
  add(spans: readonly SpanRecord[]): void {
    for (const span of spans) this.#addOne(span);
    while (this.#traces.size > this.options.maxTraces) {
      const oldest = this.#traces.keys().next().value;
      if (oldest === undefined) break;
      this.#drop(oldest);
    }
  }

  #addOne(span: SpanRecord): void {
    let stored = this.#traces.get(span.traceId);
    if (stored) this.#traces.delete(span.traceId);
    else stored = { spans: [], spanIds: new Set(), jobIds: new Set(), idempotencyKeys: new Set(), writeTraceIds: new Set(), droppedSpans: 0 };
    this.#traces.set(span.traceId, stored);
    if (stored.spanIds.has(span.spanId)) return;
    if (stored.spans.length >= this.options.maxSpansPerTrace) {
      stored.droppedSpans += 1;
      return;
    }
    stored.spans.push(span);
    stored.spanIds.add(span.spanId);
    const index = (map: Map<string, Set<string>>, own: Set<string>, value: unknown) => {
      if (value === undefined || value === '') return;
      const key = String(value);
      own.add(key);
      const ids = map.get(key) ?? new Set<string>();
      ids.add(span.traceId);
      map.set(key, ids);
    };
    index(this.#byJobId, stored.jobIds, span.attributes[ATTRIBUTES.jobId]);
    index(this.#byIdempotencyKey, stored.idempotencyKeys, span.attributes[ATTRIBUTES.idempotencyKey]);
    const written = span.attributes[ATTRIBUTES.writeTraceId];
    if (written !== undefined) index(this.#readsOf, stored.writeTraceIds, normalizeTraceId(String(written)) ?? String(written));
  }

  #drop(traceId: string): void {
    const stored = this.#traces.get(traceId);
    if (!stored) return;
    this.#traces.delete(traceId);
    const unindex = (map: Map<string, Set<string>>, keys: Set<string>) => {
      for (const key of keys) {
        const ids = map.get(key);
        ids?.delete(traceId);
        if (ids?.size === 0) map.delete(key);
      }
    };
    unindex(this.#byJobId, stored.jobIds);
    unindex(this.#byIdempotencyKey, stored.idempotencyKeys);
    unindex(this.#readsOf, stored.writeTraceIds);
  }

  /**
   * The traces of `key`: the trace it names (32 hex digits or X-Ray's `1-…-…`), the traces of the
   * job it names, and those of the idempotency key it names; each with its earliest reads.
   */
  query(key: string): TraceQueryResult {
    const matchedBy: TraceMatch[] = [];
    const ids = new Set<string>();
    const traceId = normalizeTraceId(key);
    if (traceId !== undefined && this.#traces.has(traceId)) {
      matchedBy.push('traceId');
      ids.add(traceId);
    }
    for (const [match, map] of [['jobId', this.#byJobId], ['idempotencyKey', this.#byIdempotencyKey]] as const) {
      const found = map.get(key);
      if (!found) continue;
      matchedBy.push(match);
      for (const id of found) ids.add(id);
    }
    const traces = [...ids].map((id) => this.#view(id)).sort((a, b) => start(a.spans) - start(b.spans));
    return { key, matchedBy, traces };
  }

  #view(traceId: string): TraceView {
    const spans = [...(this.#traces.get(traceId)?.spans ?? [])].sort((a, b) => a.startEpochMs - b.startEpochMs);
    const reads = [...(this.#readsOf.get(traceId) ?? [])]
      .flatMap((id) => this.#traces.get(id)?.spans ?? [])
      .filter((span) => span.name === SPANS.read && (normalizeTraceId(String(span.attributes[ATTRIBUTES.writeTraceId] ?? '')) === traceId))
      .sort((a, b) => a.startEpochMs - b.startEpochMs);
    return { traceId, spans, reads: reads.slice(0, this.options.maxReadsPerTrace), readCount: reads.length };
  }

  /** The jobs with spans here, the most recently updated first (at most `limit`). */
  recentJobs(limit = 50): RecentJob[] {
    const jobs = new Map<string, RecentJob>();
    const traceIds = [...this.#traces.keys()];
    for (let i = traceIds.length - 1; i >= 0 && jobs.size < limit; i -= 1) {
      const stored = this.#traces.get(traceIds[i] ?? '');
      if (!stored) continue;
      for (const jobId of stored.jobIds) {
        if (jobs.has(jobId) || jobs.size >= limit) continue;
        const own = stored.spans.filter((span) => span.attributes[ATTRIBUTES.jobId] === jobId);
        const records = own.filter((span) => span.name === SPANS.record && span.attributes[ATTRIBUTES.outcome] !== undefined);
        const jobType = own.find((span) => span.attributes[ATTRIBUTES.jobType] !== undefined)?.attributes[ATTRIBUTES.jobType];
        const outcome = records.sort((a, b) => a.startEpochMs - b.startEpochMs).at(-1)?.attributes[ATTRIBUTES.outcome];
        jobs.set(jobId, {
          jobId, traceId: traceIds[i] ?? '', startEpochMs: start(stored.spans),
          ...(jobType === undefined ? {} : { jobType: String(jobType) }),
          ...(outcome === undefined ? {} : { outcome: String(outcome) }),
          error: stored.spans.some((span) => span.status.code === 'ERROR'),
        });
      }
    }
    return [...jobs.values()];
  }
}

const start = (spans: readonly SpanRecord[]) => spans.reduce((min, span) => Math.min(min, span.startEpochMs), Number.POSITIVE_INFINITY);
