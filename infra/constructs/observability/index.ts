export {
  BALLAST_NAMESPACE, GRAPH_PERIOD, cacheHitRatioPercent, duplicateRatePercent, duplicateRatePercentAllVersions,
  lambdaSearchByExecutedVersion, metricsInsightsSum, percentOverVersions, searchByVersion, type EmfSource, type SearchOptions,
} from './metrics.ts';
export { alarmRunbook, type AlarmRunbook, type RunbookThresholds } from './runbook.ts';
export * as segments from './segments.ts';
