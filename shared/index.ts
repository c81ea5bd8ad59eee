/**
 * The `ballast` package entry: the producer SDK plus the envelope and job types producers build.
 *
 * @example
 * import { JobProducer } from 'ballast';
 */
export * from './producer/index.ts';
export {
  createEnvelope, CURRENT_SCHEMA_VERSION, ENVELOPE_V1, parseEnvelope, SUPPORTED_MAJOR_VERSIONS, type Envelope, type EnvelopeInput,
} from './envelope/index.ts';
