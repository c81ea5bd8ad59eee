/**
 * OpenTelemetry on the local cloud: the SDK the Lambda layer would register, in each sandbox and
 * in the cloud's own process, and the bounded in-memory span store `ballast trace` and the console
 * read (over `serveTraces`).
 */
export { SpanStore, type SpanStoreOptions } from './store.ts';
export { serveTraces } from './endpoint.ts';
export { registerProcessTracing, type ProcessTracing, type ProcessTracingOptions, type SpanListener } from './process.ts';
export { registerSandboxTracing, type SandboxTracing, type SandboxTracingOptions } from './sandbox.ts';
export { registerGlobalTracing, samplerFromEnvironment, toSpanRecord, type GlobalTracing, type GlobalTracingOptions } from './sdk.ts';
