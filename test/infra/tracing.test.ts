/**
 * OpenTelemetry on AWS: every ballast function carries the AWS Lambda Layer for OpenTelemetry and
 * the environment it reads, with its environment's sampling ratio; the IAM it needs is X-Ray's two
 * write actions and nothing more; a configuration that cannot work is refused at synth.
 */
import { registry } from '../fixtures/workloads/registry.ts';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { BallastStack } from '../../infra/ballast-stack.ts';
import { deployConfig, environmentConfig, ENVIRONMENT_NAMES, type EnvironmentConfig, type EnvironmentName } from '../../infra/config.ts';
import type { BallastFunction } from '../../infra/constructs/ballast-function.ts';
import { OTEL_LAYER_ARNS } from '../../infra/constructs/tracing.ts';
import { synthStack, TEST_ENV, TEST_SETTINGS } from '../helpers/infra.ts';

type Resource = { Type: string; Properties: Record<string, any> };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

const RATIOS: Readonly<Record<EnvironmentName, string>> = { local: '1', dev: '1', staging: '0.2', prod: '0.05' };
const LAYER = 'arn:aws:lambda:eu-west-1:615299751070:layer:AWSOpenTelemetryDistroJs:16';
/** The variables the layer's wrapper reads, the same for every function but the ratio and the service name. */
const LAYER_ENVIRONMENT = {
  AWS_LAMBDA_EXEC_WRAPPER: '/opt/otel-instrument',
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_PROPAGATORS: 'xray,tracecontext',
  OTEL_AWS_APPLICATION_SIGNALS_ENABLED: 'false',
  OTEL_AWS_LAMBDA_FAST_START: 'false',
  OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'aws-sdk',
  OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'http',
};
const OTEL_VARIABLES = ['AWS_LAMBDA_EXEC_WRAPPER', 'OTEL_SERVICE_NAME', 'OTEL_TRACES_SAMPLER_ARG', ...Object.keys(LAYER_ENVIRONMENT)];

const idOf = (construct: IConstruct): string => {
  const cfn = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(cfn).resolve(cfn.logicalId) as string;
};

/** Every function ballast builds, by the service name its traces carry. */
function ballastFunctions(stack: BallastStack): Record<string, BallastFunction> {
  const { worker } = stack;
  return {
    'ballast-worker': worker.function,
    'ballast-pre-traffic-check': worker.preTrafficCheck,
    ...(worker.postTrafficCheck ? { 'ballast-post-traffic-check': worker.postTrafficCheck } : {}),
    'ballast-cache-invalidator': stack.invalidator,
    'ballast-invalidation-repair': stack.invalidationRepair,
    'ballast-read-api': stack.readApi,
  };
}

const functionResource = (template: Template, fn: BallastFunction) => (template.toJSON().Resources as Record<string, Resource>)[idOf(fn)]!;
const variablesOf = (resource: Resource): Record<string, unknown> => resource.Properties.Environment?.Variables ?? {};

/** The stack for `env` built from `config` in `region` (no region: environment-agnostic, as `npm start` synthesizes it), bundling skipped. */
function stackIn(region: string | undefined, config: EnvironmentConfig = environmentConfig('dev', { settings: TEST_SETTINGS })) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new BallastStack(app, `ballast-${config.name}`, {
    config, registry, workerVersion: 'test', ...(region ? { env: { account: TEST_ENV.account, region } } : {}),
  });
  return { stack, template: Template.fromStack(stack) };
}
const withTracing = (tracing: Partial<EnvironmentConfig['tracing']>) => (config: EnvironmentConfig): EnvironmentConfig =>
  ({ ...config, tracing: { ...config.tracing, ...tracing } });
const context = (values: Record<string, string>) => (key: string) => values[key];

describe('tracing: OpenTelemetry through the AWS Lambda Layer for OpenTelemetry', () => {
  for (const env of ENVIRONMENT_NAMES) {
    it(`${env}: every function carries the layer and its environment, sampling ${RATIOS[env]}`, () => {
      // GIVEN/WHEN
      const { stack, template } = synthStack(env);
      const functions = ballastFunctions(stack);
      // THEN
      for (const [service, fn] of Object.entries(functions)) {
        const resource = functionResource(template, fn);
        assert.deepEqual(resource.Properties.Layers, [LAYER], `${env} ${service}: the layer, once`);
        assert.deepEqual(resource.Properties.TracingConfig, { Mode: 'Active' }, `${env} ${service}: the X-Ray daemon the layer exports to`);
        const variables = variablesOf(resource);
        assert.deepEqual(Object.fromEntries(OTEL_VARIABLES.map((name) => [name, variables[name]])),
          { ...LAYER_ENVIRONMENT, OTEL_SERVICE_NAME: service, OTEL_TRACES_SAMPLER_ARG: RATIOS[env] }, `${env} ${service}`);
        // AND the service name is the one its logs and metrics carry, where it has one
        if (variables.POWERTOOLS_SERVICE_NAME !== undefined) assert.equal(variables.POWERTOOLS_SERVICE_NAME, service);
      }
      // AND that is every function but CDK's own custom-resource handler
      const all = Object.entries(template.findResources('AWS::Lambda::Function'));
      const ours = new Set(Object.values(functions).map(idOf));
      assert.deepEqual(all.filter(([id]) => !ours.has(id)).map(([id, fn]) => [id.replace(/[0-9A-F]{8}$/, ''), fn.Properties.Layers]),
        [['CustomVpcRestrictDefaultSGCustomResourceProviderHandler', undefined]]);
      assert.equal(Object.keys(functions).length, env === 'staging' || env === 'prod' ? 6 : 5);
    });
  }

  it('local: on with every trace sampled, as the local cloud reads it from the template (it ignores Layers)', () => {
    // GIVEN/WHEN the stack `npm start` synthesizes
    const { template } = synthStack('local');
    const functions = Object.values(template.findResources('AWS::Lambda::Function')).map((fn) => variablesOf(fn as Resource))
      .filter((variables) => variables.WORKER_VERSION !== undefined);
    // THEN the variables it detects tracing and its sampler by
    assert.equal(functions.length, 5);
    for (const variables of functions) {
      assert.equal(typeof variables.AWS_LAMBDA_EXEC_WRAPPER, 'string');
      assert.equal(variables.OTEL_TRACES_SAMPLER, 'parentbased_traceidratio');
      assert.equal(Number(variables.OTEL_TRACES_SAMPLER_ARG), 1);
      assert.match(String(variables.OTEL_SERVICE_NAME), /^ballast-[a-z-]+$/);
    }
    assert.deepEqual(environmentConfig('local').tracing, { enabled: true, samplingRatio: 1 });
  });

  it('grants X-Ray\'s two write actions on "*" to every function role, and nothing else for tracing', () => {
    for (const env of ENVIRONMENT_NAMES) {
      // GIVEN/WHEN
      const { stack, template } = synthStack(env);
      const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Resource[];
      // THEN each function's role has exactly one X-Ray statement: what the daemon relays spans with
      for (const [service, fn] of Object.entries(ballastFunctions(stack))) {
        const statements = policies
          .filter((policy) => policy.Properties.Roles.some((role: { Ref?: string }) => role.Ref === idOf(fn.executionRole)))
          .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[])
          .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('xray:')));
        assert.deepEqual(statements, [{ Effect: 'Allow', Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], Resource: '*' }], `${env} ${service}`);
      }
      // AND no sampling-rule reads (the sampler is local), no OTLP endpoint, no Application Signals
      const text = JSON.stringify(template.toJSON());
      assert.doesNotMatch(text, /xray:GetSampling|xray:PutSpans|application-signals|ApplicationSignals/, env);
      const roles = template.toJSON().Resources as Record<string, Resource>;
      for (const fn of Object.values(ballastFunctions(stack))) assert.equal(roles[idOf(fn.executionRole)]!.Properties.ManagedPolicyArns, undefined);
    }
  });

  it('keeps active tracing and adds neither layer nor variables when an environment turns tracing off', () => {
    // GIVEN/WHEN
    const { stack, template } = synthStack('dev', withTracing({ enabled: false }));
    // THEN
    for (const [service, fn] of Object.entries(ballastFunctions(stack))) {
      const resource = functionResource(template, fn);
      assert.equal(resource.Properties.Layers, undefined, service);
      assert.deepEqual(resource.Properties.TracingConfig, { Mode: 'Active' }, service);
      assert.deepEqual(Object.keys(variablesOf(resource)).filter((name) => OTEL_VARIABLES.includes(name)), [], service);
    }
  });

  describe('the layer ARN', () => {
    it('follows the stack\'s region: its publisher account and version there', () => {
      for (const [region, arn] of [
        ['us-east-1', 'arn:aws:lambda:us-east-1:615299751070:layer:AWSOpenTelemetryDistroJs:16'],
        ['ap-east-1', 'arn:aws:lambda:ap-east-1:888577020596:layer:AWSOpenTelemetryDistroJs:16'],
        ['mx-central-1', 'arn:aws:lambda:mx-central-1:610118373846:layer:AWSOpenTelemetryDistroJs:9'],
      ] as const) {
        // GIVEN/WHEN
        const { stack, template } = stackIn(region);
        // THEN
        assert.deepEqual(functionResource(template, stack.readApi).Properties.Layers, [arn], region);
      }
    });

    it('is looked up by AWS::Region at deploy in an environment-agnostic stack (how `npm start` synthesizes)', () => {
      // GIVEN/WHEN
      const { stack, template } = stackIn(undefined);
      // THEN
      const lookup = { 'Fn::FindInMap': ['OtelLayerArns', { Ref: 'AWS::Region' }, 'arn'] };
      for (const fn of Object.values(ballastFunctions(stack))) assert.deepEqual(functionResource(template, fn).Properties.Layers, [lookup]);
      const mapping = template.toJSON().Mappings.OtelLayerArns as Record<string, { arn: string }>;
      assert.deepEqual(Object.fromEntries(Object.entries(mapping).map(([region, { arn }]) => [region, arn])), OTEL_LAYER_ARNS);
    });

    it('is replaced by -c otelLayerArn, and only the layer changes', () => {
      // GIVEN
      const arn = 'arn:aws:lambda:eu-west-1:615299751070:layer:AWSOpenTelemetryDistroJs:99';
      const config = deployConfig(context({ env: 'prod', ...TEST_SETTINGS, alarmEmail: 'oncall@example.com', otelLayerArn: arn }), registry);
      // WHEN
      const { stack, template } = stackIn(TEST_ENV.region, config);
      // THEN
      assert.deepEqual(config.tracing, { enabled: true, samplingRatio: 0.05, layerArn: arn });
      for (const fn of Object.values(ballastFunctions(stack))) {
        const resource = functionResource(template, fn);
        assert.deepEqual(resource.Properties.Layers, [arn]);
        assert.equal(variablesOf(resource).OTEL_TRACES_SAMPLER_ARG, '0.05');
      }
      // AND without the flag, the default
      assert.equal(deployConfig(context({ env: 'dev', ...TEST_SETTINGS }), registry).tracing.layerArn, undefined);
      assert.equal(deployConfig(context({ env: 'dev', ...TEST_SETTINGS, otelLayerArn: '' }), registry).tracing.layerArn, undefined);
    });

    it('warns about a layer it does not know (the wrapper and variables are AWSOpenTelemetryDistroJs\'s), and about a region it cannot check', () => {
      // GIVEN/WHEN
      const other = withTracing({ layerArn: 'arn:aws:lambda:eu-west-1:123456789012:layer:my-otel-arm64:3' });
      const { stack } = stackIn(TEST_ENV.region, other(environmentConfig('dev', { settings: TEST_SETTINGS })));
      const agnostic = stackIn(undefined, withTracing({ layerArn: LAYER })(environmentConfig('dev', { settings: TEST_SETTINGS }))).stack;
      // THEN
      Annotations.fromStack(stack).hasWarning('*', Match.stringLikeRegexp("names 'my-otel-arm64', not AWSOpenTelemetryDistroJs"));
      Annotations.fromStack(agnostic).hasWarning('*', Match.stringLikeRegexp('The stack has no region at synth'));
      assert.deepEqual(Annotations.fromStack(synthStack('dev').stack).findWarning('*', Match.stringLikeRegexp('otelLayerArn')), []);
    });
  });

  describe('refusals at synth', () => {
    it('refuses a sampling ratio outside [0, 1], naming the field and the value; accepts both ends', () => {
      for (const ratio of [1.5, -0.1, Number.NaN]) {
        assert.throws(() => synthStack('prod', withTracing({ samplingRatio: ratio })),
          new RegExp(`ballast-prod: tracing\\.samplingRatio must be between 0 and 1 .*, got ${ratio}: fix the environment's tracing\\.samplingRatio in infra/config\\.ts\\.`));
      }
      // (also with tracing off: the value is wrong either way)
      assert.throws(() => synthStack('dev', withTracing({ enabled: false, samplingRatio: 2 })), /samplingRatio must be between 0 and 1/);
      for (const ratio of [0, 1]) assert.doesNotThrow(() => synthStack('dev', withTracing({ samplingRatio: ratio })));
    });

    it('refuses a layer from another region than the stack\'s, naming both and the ARN to use', () => {
      assert.throws(() => synthStack('dev', withTracing({ layerArn: 'arn:aws:lambda:us-east-1:615299751070:layer:AWSOpenTelemetryDistroJs:16' })),
        new RegExp('ballast-dev: -c otelLayerArn is a layer in us-east-1, but the stack deploys to eu-west-1 .*: pass the layer\'s ARN for '
          + `eu-west-1 \\(${LAYER}\\), or leave the flag out for the default\\.`));
    });

    it('refuses an x86_64 layer and the legacy ADOT layer, which has no /opt/otel-instrument', () => {
      assert.throws(() => synthStack('dev', withTracing({ layerArn: 'arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-nodejs-amd64-ver-1-30-2:1' })),
        /-c otelLayerArn names an x86_64 layer \('aws-otel-nodejs-amd64-ver-1-30-2' says amd64\), but ballast's functions run on arm64/);
      assert.throws(() => synthStack('dev', withTracing({ layerArn: 'arn:aws:lambda:eu-west-1:123456789012:layer:otel-x86_64-node:2' })),
        /names an x86_64 layer \('otel-x86_64-node' says x86_64\)/);
      assert.throws(() => synthStack('dev', withTracing({ layerArn: 'arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-nodejs-arm64-ver-1-30-2:1' })),
        /names the legacy ADOT layer 'aws-otel-nodejs-arm64-ver-1-30-2', whose documentation stops at Node\.js 22 and which has no \/opt\/otel-instrument/);
    });

    it('refuses what is not a layer version ARN', () => {
      for (const arn of ['arn:aws:lambda:eu-west-1:615299751070:layer:AWSOpenTelemetryDistroJs', 'AWSOpenTelemetryDistroJs:16',
        'arn:aws:lambda:eu-west-1:615299751070:function:AWSOpenTelemetryDistroJs:16']) {
        assert.throws(() => synthStack('dev', withTracing({ layerArn: arn })),
          new RegExp(`-c otelLayerArn must be a Lambda layer version ARN \\(arn:aws:lambda:<region>:<account>:layer:<name>:<version>\\), got '${arn}'`));
      }
    });

    it('refuses a region without a known layer version for nodejs24.x, telling what to pass', () => {
      assert.throws(() => stackIn('me-south-1'), new RegExp('no AWSOpenTelemetryDistroJs version known to support nodejs24.x in me-south-1: '
        + 'deploy with -c otelLayerArn=arn:aws:lambda:me-south-1:980921751758:layer:AWSOpenTelemetryDistroJs:<version>'));
      assert.throws(() => stackIn('xx-nowhere-1'), /AWSOpenTelemetryDistroJs is not published in xx-nowhere-1 as far as ballast knows: deploy with -c otelLayerArn=/);
      // AND the flag, or tracing off, gets past it
      const override = 'arn:aws:lambda:me-south-1:980921751758:layer:AWSOpenTelemetryDistroJs:20';
      assert.doesNotThrow(() => stackIn('me-south-1', withTracing({ layerArn: override })(environmentConfig('dev', { settings: TEST_SETTINGS }))));
      assert.doesNotThrow(() => stackIn('xx-nowhere-1', withTracing({ enabled: false })(environmentConfig('dev', { settings: TEST_SETTINGS }))));
    });
  });
});
