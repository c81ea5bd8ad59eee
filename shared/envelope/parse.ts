import { IncompatibleVersionError, InvalidEnvelopeError } from '../errors/index.ts';
import { ENVELOPE_SCHEMAS, type Envelope } from './schema.ts';
import { jsonBoundsViolation, MAX_PAYLOAD_DEPTH } from './bounds.ts';
import * as z from 'zod/mini';
import { describeIssues, safeParse } from '../validation/index.ts';

const VERSION_ONLY = z.object({ schemaVersion: z.string().check(z.regex(/^\d+\.\d+$/, 'must look like <major>.<minor>')) });

/**
 * Parses and validates an SQS message body as an envelope.
 *
 * @throws InvalidEnvelopeError for bad JSON, a malformed envelope, a payload nested deeper than
 *   {@link MAX_PAYLOAD_DEPTH} levels or a string that is not well-formed Unicode (fatal: to the DLQ)
 * @throws IncompatibleVersionError for a major version this worker does not read (transient)
 * @example
 * const envelope = parseEnvelope(record.body);
 */
export function parseEnvelope(body: string): Envelope {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    throw new InvalidEnvelopeError(`body is not JSON: ${(error as Error).message}`, { cause: error });
  }
  // Before anything walks the body recursively (zod, hashing, marshalling).
  const violation = jsonBoundsViolation(json, MAX_PAYLOAD_DEPTH, -1);
  if (violation) throw new InvalidEnvelopeError(`body ${violation}`);
  const version = safeParse(VERSION_ONLY, json);
  if (!version.success) {
    throw new InvalidEnvelopeError(`schemaVersion ${describeIssues(version.error)}`);
  }
  const major = Number(version.data.schemaVersion.split('.')[0]);
  const schema = ENVELOPE_SCHEMAS[major];
  if (!schema) {
    throw new IncompatibleVersionError(
      `schemaVersion ${version.data.schemaVersion}: this worker reads major versions ${Object.keys(ENVELOPE_SCHEMAS).join(', ')}`,
      { context: { schemaVersion: version.data.schemaVersion } },
    );
  }
  const parsed = safeParse(schema, json);
  if (!parsed.success) throw new InvalidEnvelopeError(`envelope ${describeIssues(parsed.error)}`);
  return parsed.data;
}

export { describeIssues };
