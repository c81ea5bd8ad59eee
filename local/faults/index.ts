export {
  DYNAMODB_FAULT_KINDS, startDynamoDbFaultProxy,
  type DynamoDbExchange, type DynamoDbFaultKind, type DynamoDbFaultProxy, type DynamoDbFaultProxyOptions, type DynamoDbFaultRates,
} from './dynamodb-proxy.ts';
export { fenceWatch, lockWritesOnWire, type FenceReport, type FenceWatch } from './fence-watch.ts';
export { startTcpFaultProxy, type TcpFaultProxy } from './tcp-proxy.ts';
