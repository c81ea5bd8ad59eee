/** Lambda entry point of the worker's CodeDeploy post-traffic hook. */
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { CodeDeployClient } from '@aws-sdk/client-codedeploy';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { createPostTrafficCheck, postTrafficCheckConfigFromEnv } from './check.ts';

const config = postTrafficCheckConfigFromEnv();

export const handler = createPostTrafficCheck({
  codeDeploy: new CodeDeployClient(awsClientConfig()),
  cloudWatch: new CloudWatchClient(awsClientConfig()),
  ...config,
});
