/**
 * `@ballast-stack/ballast/local`: the local cloud for a team's own CDK app (`ballast dev` runs it
 * from their `cdk.json`), and what a workload's `local` module is written with — fakes of its
 * external APIs, demo and chaos traffic. The engines (DynamoDB Local from
 * `amplify-dynamodb-simulator`, fauxqs, `redis-server`) are optional peers, loaded only when started.
 */
export type { WorkloadLocal } from './workload-local.ts';
export { workloadLocal } from './workload-local.ts';
export type { DemoMessage, DemoRequest, DemoTraffic } from './demo/workload.ts';
export type {
  ChaosCheck, ChaosConvoy, ChaosJob, ChaosPoison, ChaosTraffic, ChaosTrafficRequest, WorkloadChaos,
} from './chaos/workload-chaos.ts';
export { seededRandom } from './chaos/random.ts';
export {
  EXTERNAL_API_FAULTS, startExternalApi, startWorkloadFakes, type ExternalApi, type ExternalApiChaos, type ExternalApiFaultKind,
  type RunningFakes, type WorkloadFake,
} from './external-api/index.ts';
export { engineEnvironment, LOCAL_CREDENTIALS, LOCAL_REGION, startEngines, type EngineEndpoints, type LocalEngines } from './engines/index.ts';
export { startLocalCloud, type LocalCloud, type LocalCloudOptions } from './cloud/index.ts';
export { synthesize, type SynthesizedStack } from './cloud/assembly.ts';
