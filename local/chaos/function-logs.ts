/**
 * The functions' WARN and ERROR lines of a chaos run, kept by the job and the resource each names,
 * so that a violation's report shows what the functions logged about it: the run keeps no other
 * copy of their output, and a violation found at the end is otherwise a key without a story (the
 * orphaned claim of seed 55 had to be explained from the code alone).
 */

const KEPT_LEVELS: ReadonlySet<string> = new Set(['WARN', 'ERROR', 'CRITICAL']);
/** A line is cut to this many characters: an error's stack is long, and its first lines say enough. */
const MAX_LINE_CHARS = 1_500;
/** Lines kept over the whole run at most: a 50,000-message run keeps far fewer, but a run gone wrong must not exhaust memory. */
const MAX_KEPT_LINES = 200_000;
/** A logged error's stack is cut to its first frames. */
const STACK_LINES = 4;
/** Fields every line of a function carries that say nothing about the job. */
const DROPPED_FIELDS = ['service', 'sampling_rate', 'xray_trace_id', 'function_arn', 'function_memory_size', 'function_request_id', 'cold_start'];

export interface FunctionLogsOptions {
  /** Lines kept from the start of each key's story. @default 4 */
  readonly first?: number;
  /** Lines kept from its end (the most recent; usually what led to the violation). @default 12 */
  readonly last?: number;
}

/** One key's lines: its first few, its latest few, and how many were dropped between them. */
interface Story {
  readonly first: string[];
  readonly last: string[];
  skipped: number;
}

export class FunctionLogs {
  readonly #byKey = new Map<string, Story>();
  readonly #counts = new Map<string, number>();
  readonly #first: number;
  readonly #last: number;
  #kept = 0;

  constructor(options: FunctionLogsOptions = {}) {
    this.#first = options.first ?? 4;
    this.#last = options.last ?? 12;
  }

  /** Takes one line of a function's output (the local cloud's `onLog`); what is not a WARN or ERROR JSON line is ignored. */
  readonly observe = (line: string, functionName: string): void => {
    if (!line.startsWith('{')) return;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const level = String(entry.level ?? '');
    if (!KEPT_LEVELS.has(level)) return;
    const summary = `${functionName} ${level} ${String(entry.message ?? '')}`;
    this.#counts.set(summary, (this.#counts.get(summary) ?? 0) + 1);
    const keys = keysOf(entry);
    if (keys.length === 0 || this.#kept >= MAX_KEPT_LINES) return;
    for (const field of DROPPED_FIELDS) delete entry[field];
    const error = entry.error as { stack?: unknown } | undefined;
    if (typeof error?.stack === 'string') error.stack = error.stack.split('\n').slice(0, STACK_LINES + 1).join('\n');
    const text = `${functionName} ${JSON.stringify(entry)}`.slice(0, MAX_LINE_CHARS);
    for (const key of keys) this.#keep(key, text);
  };

  /** How many WARN and ERROR lines the functions logged, by function, level and message: the `top` most frequent. */
  counts(top = 30): Record<string, number> {
    return Object.fromEntries([...this.#counts].sort(([, a], [, b]) => b - a).slice(0, top));
  }

  /**
   * The lines of every job or resource a violation's example names (an idempotency key, a
   * resource id, `idem#…` or `lock#…`), by key: for each violated invariant, at most `maxKeys` keys.
   */
  about(examples: Partial<Record<string, readonly string[]>>, maxKeys = 3): Record<string, Record<string, string[]>> {
    const told: Record<string, Record<string, string[]>> = {};
    for (const [invariant, list] of Object.entries(examples)) {
      const stories: Record<string, string[]> = {};
      for (const token of (list ?? []).flatMap((example) => example.match(/[A-Za-z0-9_.:-]+/g) ?? [])) {
        const key = token.replace(/[.:]+$/, '');
        const story = this.#byKey.get(key);
        if (!story || key in stories) continue;
        stories[key] = [...story.first, ...(story.skipped > 0 ? [`… ${story.skipped} lines between`] : []), ...story.last];
        if (Object.keys(stories).length >= maxKeys) break;
      }
      if (Object.keys(stories).length > 0) told[invariant] = stories;
    }
    return told;
  }

  #keep(key: string, text: string): void {
    let story = this.#byKey.get(key);
    if (!story) this.#byKey.set(key, (story = { first: [], last: [], skipped: 0 }));
    if (story.first.length < this.#first) {
      story.first.push(text);
      this.#kept += 1;
      return;
    }
    story.last.push(text);
    this.#kept += 1;
    if (story.last.length > this.#last) {
      story.last.shift();
      story.skipped += 1;
      this.#kept -= 1;
    }
  }
}

/** The job and resource a line is about: its idempotency key, and its lock's resource. */
function keysOf(entry: Record<string, unknown>): string[] {
  const keys: string[] = [];
  if (typeof entry.idempotencyKey === 'string') keys.push(entry.idempotencyKey);
  if (typeof entry.lockKey === 'string') keys.push(entry.lockKey.replace(/^lock#/, ''));
  if (typeof entry.id === 'string') keys.push(entry.id);
  return keys;
}
