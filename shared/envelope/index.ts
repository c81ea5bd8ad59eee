export { CURRENT_SCHEMA_VERSION, ENVELOPE_SCHEMAS, ENVELOPE_V1, SUPPORTED_MAJOR_VERSIONS, type Envelope } from './schema.ts';
export { describeIssues, parseEnvelope } from './parse.ts';
export { createEnvelope, type EnvelopeInput } from './create.ts';
export { SAMPLE_ENVELOPE_BODIES } from './samples.ts';
export { jsonBoundsViolation, MAX_PAYLOAD_DEPTH } from './bounds.ts';
