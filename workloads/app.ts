/**
 * This repository's CDK app, written as a team's would be: `npx cdk synth|deploy -c env=<local|dev|staging|prod>
 * [-c <SETTING>=...] [-c alarmEmail=...] [-c workerVersion=...] [-c otelLayerArn=...]`. `env` is
 * required; dev needs every registered workload setting (e.g. `-c PARTNER_API_URL=https://...`),
 * staging and prod the alarm address too (see `deployConfig`).
 */
import { App } from 'aws-cdk-lib';
import { addNagChecks, BallastStack, deployConfig, suppressReviewedFindings } from '@ballast-stack/ballast/cdk';
import { registry } from './registry.ts';

const app = new App();
const config = deployConfig((key) => app.node.tryGetContext(key), registry);
const stack = new BallastStack(app, `ballast-${config.name}`, {
  config,
  registry,
  workerVersion: app.node.tryGetContext('workerVersion'),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
suppressReviewedFindings(stack);
addNagChecks(app);
