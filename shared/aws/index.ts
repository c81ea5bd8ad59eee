export { awsClientConfig, FUNCTION_TIMEOUT_ENV, type AwsClientConfig } from './client-config.ts';
