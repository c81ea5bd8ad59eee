import type { Envelope } from '../envelope/index.ts';
import type { JobCatalog } from '../workloads/job-types.ts';
import { InvalidJobError, ProducerError } from './errors.ts';
import { buildJob, type JobRequest } from './jobs.ts';
import { assertMessageSize, DEFAULT_MAX_MESSAGE_BYTES } from './size.ts';

/** One valid line of a jobs file. */
export interface ParsedJobLine {
  /** 1-based line number in the input. */
  readonly line: number;
  readonly envelope: Envelope;
}

/** What {@link parseJobLines} found: every valid job and every refused line, in input order. */
export interface ParsedJobLines {
  readonly jobs: readonly ParsedJobLine[];
  readonly errors: readonly ProducerError[];
}

export interface ParseJobLinesOptions {
  /** The job types lines may name (the registered workloads', `workloadCatalog(WORKLOADS)`). */
  readonly catalog: JobCatalog;
  /** Stamped on every envelope that does not name its own. @default 'unknown' */
  readonly producerVersion?: string;
  /** @default DEFAULT_MAX_MESSAGE_BYTES */
  readonly maxMessageBytes?: number;
}

/**
 * Reads JSON lines, one job per line (`{"type", "resourceId", "payload", "idempotencyKey"?, "jobId"?,
 * "traceId"?}`), builds and size-checks each envelope. Blank lines are skipped. A bad line never
 * stops the others from being checked; each error names its line.
 *
 * @example
 * const { jobs, errors } = parseJobLines(readFileSync('jobs.jsonl', 'utf8'), { catalog: JOB_CATALOG, producerVersion: 'billing@1.4.2' });
 * for (const error of errors) console.error(error.message); // "line 3: unknown job type 'widget.scrap' ..."
 */
export function parseJobLines(text: string, options: ParseJobLinesOptions): ParsedJobLines {
  const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const jobs: ParsedJobLine[] = [];
  const errors: ProducerError[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    try {
      const envelope = buildJob(options.catalog, requestOf(raw, line, options.producerVersion), { line });
      assertMessageSize(JSON.stringify(envelope), maxBytes, `job ${envelope.jobId}`, {}, { line });
      jobs.push({ line, envelope });
    } catch (error) {
      if (!(error instanceof ProducerError)) throw error;
      errors.push(error);
    }
  });
  return { jobs, errors };
}

function requestOf(raw: string, line: number, producerVersion: string | undefined): JobRequest {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    throw new InvalidJobError(`not valid JSON (${(error as Error).message})`, { line, cause: error });
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw new InvalidJobError('expected a JSON object {"type", "resourceId", "payload", "idempotencyKey"}', { line });
  }
  const fields = json as Record<string, unknown>;
  for (const name of ['type', 'resourceId'] as const) {
    if (typeof fields[name] !== 'string' || fields[name] === '') throw new InvalidJobError(`${name} is required (a non-empty string)`, { line });
  }
  if (fields.payload !== undefined && (typeof fields.payload !== 'object' || fields.payload === null || Array.isArray(fields.payload))) {
    throw new InvalidJobError('payload must be a JSON object', { line });
  }
  const text = (name: string) => (typeof fields[name] === 'string' ? (fields[name] as string) : undefined);
  const producedAt = text('producedAt');
  return {
    type: fields.type as string,
    resourceId: fields.resourceId as string,
    payload: (fields.payload ?? {}) as Record<string, unknown>,
    ...(text('idempotencyKey') !== undefined ? { idempotencyKey: text('idempotencyKey') } : {}),
    ...(text('jobId') !== undefined ? { jobId: text('jobId') } : {}),
    ...(text('traceId') !== undefined ? { traceId: text('traceId') } : {}),
    ...(producedAt !== undefined ? { producedAt: new Date(producedAt) } : {}),
    producerVersion: text('producerVersion') ?? producerVersion ?? 'unknown',
  };
}
