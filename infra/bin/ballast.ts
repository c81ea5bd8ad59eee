/** CDK app entry: `npx cdk synth|deploy -c env=<local|dev|staging|prod>`. */
import { App } from 'aws-cdk-lib';
import { environmentConfig } from '../config.ts';
import { BallastStack } from '../ballast-stack.ts';

const app = new App();
const config = environmentConfig(app.node.tryGetContext('env') ?? 'dev');
new BallastStack(app, `ballast-${config.name}`, {
  config,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
