export {
  EXTERNAL_API_FAULTS, startExternalApi,
  type ExternalApi, type ExternalApiChaos, type ExternalApiFaultKind, type ExternalApiOptions,
} from './server.ts';
export { startWorkloadFakes, workloadLocal, type RunningFakes, type WorkloadFake, type WorkloadLocal } from './fakes.ts';
