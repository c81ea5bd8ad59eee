/**
 * CDK app entry: `npx cdk synth|deploy -c env=<local|dev|staging|prod> [-c <SETTING>=...]
 * [-c alarmEmail=...] [-c workerVersion=...] [-c otelLayerArn=...]`. `env` is required; dev needs every registered
 * workload setting (e.g. `-c <NAME>_API_URL=https://...`), staging and prod the alarm address
 * too (see `deployConfig`). The worker version defaults to the package version + a hash of what the worker's bundle contains.
 */
import { App } from 'aws-cdk-lib';
import { deployConfig } from '../config.ts';
import { BallastStack } from '../ballast-stack.ts';
import { addNagChecks, suppressReviewedFindings } from '../nag-suppressions.ts';
import { codeVersion } from '../code-version.ts';

const app = new App();
const config = deployConfig((key) => app.node.tryGetContext(key));
const stack = new BallastStack(app, `ballast-${config.name}`, {
  config,
  workerVersion: app.node.tryGetContext('workerVersion') ?? codeVersion('worker'),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
suppressReviewedFindings(stack);
addNagChecks(app);
