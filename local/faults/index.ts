export {
  DYNAMODB_FAULT_KINDS, startDynamoDbFaultProxy,
  type DynamoDbFaultKind, type DynamoDbFaultProxy, type DynamoDbFaultProxyOptions, type DynamoDbFaultRates,
} from './dynamodb-proxy.ts';
export { startTcpFaultProxy, type TcpFaultProxy } from './tcp-proxy.ts';
