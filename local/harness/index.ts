/**
 * `@ballast-stack/ballast/testing`: harnesses for a team's workload tests on the real engines —
 * the worker over their registry's jobs, with their fakes, and the read API over their entities.
 * Any test runner: start one in a before-all hook, `stop()` it in an after-all hook.
 */
export { startWorkerHarness, type TestQueues, type WorkerHarness, type WorkerHarnessOptions, type WorkerTestHandler } from './worker-harness.ts';
export { startReadApiHarness, type ReadApiHarness, type ReadApiHarnessOptions } from './read-api-harness.ts';
export { createBallastTables } from './tables.ts';
