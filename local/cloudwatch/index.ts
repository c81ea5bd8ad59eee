/** The local CloudWatch: metric time series, metric math, and the stack's alarms evaluated against them. */
export { alarmDefinition, evaluateAlarm, insights, type AlarmDefinition, type AlarmEvaluation, type AlarmState } from './alarms.ts';
export { LocalAlarms, type AlarmHistoryItem, type AlarmStatus, type AlarmTransition, type LocalAlarmsOptions } from './local-alarms.ts';
export { metricClock } from './clock.ts';
export { sampleQueueMetrics, type QueueMetricsOptions } from './queue-metrics.ts';
export { evaluateExpression, UnsupportedExpressionError, type MathScope } from './metric-math.ts';
export { MetricSeries, periodStart, statistic, type Datapoints, type MetricIdentity, type StatQuery } from './series.ts';
export { searchMetrics } from './search.ts';
export { widgetData, type MetricWidgetProperties, type WidgetData, type WidgetLine, type WidgetWindow } from './widget-data.ts';
export {
  askingConsumedCapacity, dynamoDbDatapoints, isMeasuredOperation, withoutConsumedCapacity, type DynamoDbDatapoint, type DynamoDbExchange,
} from './dynamodb-metrics.ts';
