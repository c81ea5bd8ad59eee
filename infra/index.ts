/**
 * `@ballast-stack/ballast/cdk`: the stack as a construct a team's own CDK app instantiates with its
 * registry, the environment settings it reads from `-c` context, the cdk-nag checks, and the
 * constructs it is built from (for a team's own additions, e.g. another queue and worker).
 *
 * @example
 * const app = new App();
 * const config = deployConfig((key) => app.node.tryGetContext(key), registry);
 * const stack = new BallastStack(app, `orders-${config.name}`, { config, registry });
 * suppressReviewedFindings(stack);
 * addNagChecks(app);
 */
export { BallastStack, REGISTRY_METADATA, type BallastStackProps } from './ballast-stack.ts';
export {
  contextSettings, deployConfig, ENVIRONMENT_NAMES, environmentConfig, REQUIRED_DEPLOY_INPUTS, UNSET_LOCAL_SETTING,
  type EnvironmentConfig, type EnvironmentName, type TracingConfig,
} from './config.ts';
export { addNagChecks, NAG_NAMESPACE, suppressReviewedFindings } from './nag-suppressions.ts';
export { codeVersion } from './code-version.ts';
export { BallastFunction, type BallastFunctionProps } from './constructs/ballast-function.ts';
export { cacheAccessString } from './constructs/cache.ts';
export { QueueWorker, type CanaryProps, type QueueWorkerProps } from './constructs/queue-worker.ts';
export { ReliableQueue, type ReliableQueueProps } from './constructs/reliable-queue.ts';
export { BallastConfigError } from './constructs/validation.ts';
export { findProjectRoot, frameworkModule, writeFunctionEntry, type FunctionEntrySpec } from './constructs/function-entry.ts';
