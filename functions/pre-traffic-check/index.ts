/** Lambda entry point of the worker's CodeDeploy pre-traffic hook. */
import { LambdaClient } from '@aws-sdk/client-lambda';
import { CodeDeployClient } from '@aws-sdk/client-codedeploy';
import { awsClientConfig } from '../../shared/aws/index.ts';
import { createPreTrafficCheck } from './check.ts';

const targetVersionArn = process.env.TARGET_VERSION_ARN;
if (!targetVersionArn) throw new Error('pre-traffic check: TARGET_VERSION_ARN is required');

export const handler = createPreTrafficCheck({ lambda: new LambdaClient(awsClientConfig()), codeDeploy: new CodeDeployClient(awsClientConfig()), targetVersionArn });
