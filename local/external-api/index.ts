export {
  EXTERNAL_API_FAULTS, startExternalApi,
  type ExternalApi, type ExternalApiChaos, type ExternalApiFaultKind, type ExternalApiOptions,
} from './server.ts';
export { startWorkloadFakes, type RunningFakes, type WorkloadFake } from './fakes.ts';
