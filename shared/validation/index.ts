/**
 * Validation with zod: the framework's own schemas (the envelope, stream records) and the shipped
 * workloads' are written with `zod/mini`, whose schemas cost a fraction of classic zod's to build
 * and bundle (a cold start pays for every schema a function's modules declare); a workload may
 * still write its schemas with classic `zod`: the framework only ever parses with them, through
 * {@link safeParse}, which takes either.
 */
import { config, safeParse as parseSafely, type core } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

// zod/mini loads no messages of its own ("Invalid input" for everything); classic zod loads these.
config(en());

/** A schema from `zod` or `zod/mini` whose output is `T`. */
export type Schema<T = unknown> = core.$ZodType<T>;

/** Parses `value` with a schema of either flavour; never throws for invalid input. */
export function safeParse<T>(schema: Schema<T>, value: unknown): core.util.SafeParseResult<T> {
  return parseSafely(schema, value) as core.util.SafeParseResult<T>;
}

/** One line naming every offending field, e.g. `idempotencyKey: Required; payload: Expected object`. */
export function describeIssues(error: core.$ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

