/**
 * The CDK app the chaos run deploys locally, for the registry its context names: the local stack with a 4-second
 * worker timeout and a 1.5-second lock lease, so that an external call slower than the lease (a
 * stalled lock holder) fits inside one invocation, and crashed batches come back after the
 * visibility timeout (6 × 4 s) rather than a minute; and a 20-second read API, so that a slow
 * reader's table read outlives the next commit of its item.
 */
import { App, Duration } from 'aws-cdk-lib';
import { contextSettings, environmentConfig } from '../../infra/config.ts';
import { BallastStack } from '../../infra/ballast-stack.ts';
import { suppressReviewedFindings } from '../../infra/nag-suppressions.ts';
import { workloadSettings } from '../../shared/workloads/index.ts';
import { loadRegistry } from '../../shared/workloads/load.ts';
import { REGISTRY_CONTEXT } from '../registry.ts';

const app = new App();
const registry = await loadRegistry(String(app.node.tryGetContext(REGISTRY_CONTEXT)));
const base = environmentConfig('local', { settings: contextSettings((key) => app.node.tryGetContext(key), workloadSettings(registry.workloads)) });
const config = {
  ...base,
  worker: { ...base.worker, timeout: Duration.seconds(4), lockLease: Duration.millis(1_500) },
  // A slow reader's table read is answered 3.5 s late (its SDK's request timeout is a quarter of
  // this, 5 s at most): long enough for a hot item's next commit and its invalidation to land
  // meanwhile on this machine.
  readApi: { ...base.readApi, timeout: Duration.seconds(20) },
};
suppressReviewedFindings(new BallastStack(app, 'ballast-local', { config, registry, workerVersion: 'chaos' }));
