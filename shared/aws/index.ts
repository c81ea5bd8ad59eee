export { awsClientConfig, FUNCTION_TIMEOUT_ENV, type AwsClientConfig } from './client-config.ts';
export { EMPTY_PAYLOAD_SHA256, presignUrl, type AwsCredentials, type PresignRequest } from './presign.ts';
