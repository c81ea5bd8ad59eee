/**
 * The worker canary across the whole stack: what each environment deploys it with (the
 * post-traffic record count, `-c canaryMinRecords`, provisioned pollers), and the version every
 * function stamps on its metrics, which the canary's alarms and hook judge by.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Stack, type CfnElement } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { deployConfig, ENVIRONMENT_NAMES, type EnvironmentConfig } from '../../infra/config.ts';
import { functionVersion, synthStack, TEST_SETTINGS } from '../helpers/infra.ts';
import { registry } from '../fixtures/workloads/registry.ts';

type Resource = { Type: string; Properties: Record<string, any> };

/** The logical id of `construct` (or its default child) as synthesized. */
const idOf = (construct: IConstruct): string => {
  const cfn = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(cfn).resolve(cfn.logicalId) as string;
};
/** The environment variables of the function `fn` in `synth`'s template. */
const variablesOf = (synth: ReturnType<typeof synthStack>, fn: IConstruct): Record<string, unknown> =>
  (synth.template.toJSON().Resources as Record<string, Resource>)[idOf(fn)]!.Properties.Environment.Variables;
/** The worker settings of an environment, changed by `worker`. */
const adjustWorker = (worker: (current: EnvironmentConfig['worker']) => EnvironmentConfig['worker']) =>
  (config: EnvironmentConfig): EnvironmentConfig => ({ ...config, worker: worker(config.worker) });
const good = { ...TEST_SETTINGS, alarmEmail: 'oncall@example.com' };

describe('worker canary per environment', () => {
  for (const [env, minRecords] of [['local', 0], ['dev', 0], ['staging', 20], ['prod', 100]] as const) {
    it(`${env}: ${minRecords ? `promotes only after the new version completed ${minRecords} records` : 'promotes on the readiness check alone (no post-traffic check)'}`, () => {
      // GIVEN/WHEN the environment's stack
      const synth = synthStack(env);
      const { stack, template } = synth;
      const aliasUpdate = Match.objectLike({ BeforeAllowTrafficHook: { Ref: idOf(stack.worker.preTrafficCheck) } });
      // THEN
      if (minRecords === 0) {
        assert.ok(!stack.worker.postTrafficCheck, 'no post-traffic check'); // (not assert.equal: a construct in a failure message takes minutes to print)
        template.hasResource('AWS::Lambda::Alias', {
          UpdatePolicy: { CodeDeployLambdaAliasUpdate: Match.objectLike({ AfterAllowTrafficHook: Match.absent() }) },
        });
        template.hasResource('AWS::Lambda::Alias', { UpdatePolicy: { CodeDeployLambdaAliasUpdate: aliasUpdate } });
        return;
      }
      const hook = stack.worker.postTrafficCheck;
      assert.ok(hook, 'a post-traffic check');
      template.hasResource('AWS::Lambda::Alias', {
        UpdatePolicy: { CodeDeployLambdaAliasUpdate: Match.objectLike({ AfterAllowTrafficHook: { Ref: idOf(hook) } }) },
      });
      const variables = variablesOf(synth, hook);
      assert.equal(variables.MIN_RECORDS, String(minRecords));
      assert.equal(variables.SETTLE_SECONDS, '180');
      // AND it counts the records of the version the stack deploys, under the worker's service
      assert.equal(variables.TARGET_WORKER_VERSION, 'test');
      assert.equal(variables.TARGET_SERVICE_NAME, variablesOf(synth, stack.worker.function).POWERTOOLS_SERVICE_NAME);
    });
  }

  it('every environment rolls back at 5 % failed invocations of the new version, counted from 10 a minute', () => {
    for (const env of ENVIRONMENT_NAMES) {
      // GIVEN/WHEN
      const { stack, template } = synthStack(env);
      const alarm = (template.toJSON().Resources as Record<string, Resource>)[idOf(stack.worker.errorsAlarm)]!.Properties;
      // THEN
      assert.equal(alarm.Threshold, 5, env);
      assert.match((alarm.Metrics as Array<{ Expression?: string }>).find((query) => query.Expression)?.Expression ?? '', /^IF\(FILL\(invocations, 0\) >= 10,/, env);
    }
  });

  it('-c canaryMinRecords reaches the stack: 0 removes staging\'s post-traffic check, another number replaces its minimum', () => {
    // GIVEN/WHEN staging deployed with each flag
    const withFlag = (canaryMinRecords: string) => synthStack('staging', () => deployConfig((key) => ({ env: 'staging', ...good, canaryMinRecords } as Record<string, unknown>)[key], registry));
    const none = withFlag('0');
    const more = withFlag('75');
    // THEN
    assert.ok(!none.stack.worker.postTrafficCheck, 'no post-traffic check with -c canaryMinRecords=0');
    none.template.resourcePropertiesCountIs('AWS::Lambda::Function', { Environment: { Variables: Match.objectLike({ MIN_RECORDS: Match.anyValue() }) } }, 0);
    assert.ok(more.stack.worker.postTrafficCheck);
    assert.equal(variablesOf(more, more.stack.worker.postTrafficCheck).MIN_RECORDS, '75');
  });

  it('the code-faults rollback alarm and the post-traffic check judge the same version the worker stamps on its metrics', () => {
    // GIVEN/WHEN prod, with its post-traffic check
    const synth = synthStack('prod');
    const { stack } = synth;
    const alarm = Object.values(synth.template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>)
      .find((resource) => resource.Properties.AlarmName === 'ballast-prod-Worker-CodeFaults-Rollback')?.Properties;
    assert.ok(alarm, 'the code-faults alarm');
    // THEN one version and one service throughout
    const worker = variablesOf(synth, stack.worker.function);
    const hook = variablesOf(synth, stack.worker.postTrafficCheck!);
    const queries = (alarm.Metrics as Array<{ MetricStat?: { Metric: { Dimensions: { Name: string; Value: unknown }[] } } }>).filter((q) => q.MetricStat);
    assert.equal(queries.length, 4);
    for (const query of queries) {
      const dimensions = Object.fromEntries(query.MetricStat!.Metric.Dimensions.map((d) => [d.Name, d.Value]));
      assert.equal(dimensions.workerVersion, worker.WORKER_VERSION);
      assert.equal(dimensions.service, worker.POWERTOOLS_SERVICE_NAME);
    }
    assert.equal(hook.TARGET_WORKER_VERSION, worker.WORKER_VERSION);
    assert.equal(hook.TARGET_SERVICE_NAME, worker.POWERTOOLS_SERVICE_NAME);
  });
});

describe('worker scaling per environment', () => {
  it('provisioned pollers from the config put the jobs mapping in provisioned mode, without the concurrency cap', () => {
    // GIVEN/WHEN dev with pollers instead of maxConcurrency
    const { template, stack } = synthStack('dev', adjustWorker(({ maxConcurrency: _, ...worker }) => ({ ...worker, provisionedPollers: { minimum: 5, maximum: 50 } })));
    // THEN
    const mapping = (template.toJSON().Resources as Record<string, Resource>)[(stack.resolve(stack.worker.eventSourceMappingId) as { Ref: string }).Ref]!.Properties;
    assert.deepEqual(mapping.ProvisionedPollerConfig, { MinimumPollers: 5, MaximumPollers: 50 });
    assert.equal(mapping.ScalingConfig, undefined);
  });

  it('refuses a config with both maxConcurrency and provisioned pollers, naming the worker', () => {
    // GIVEN dev's maxConcurrency (5) WHEN pollers are added THEN refused
    assert.throws(
      () => synthStack('dev', adjustWorker((worker) => ({ ...worker, provisionedPollers: { minimum: 5, maximum: 50 } }))),
      /ballast-dev\/Worker: maxConcurrency \(5\) and provisionedPollers cannot be combined.*remove maxConcurrency/,
    );
  });
});

describe('the version each function stamps on its logs and metrics (WORKER_VERSION)', () => {
  it('is the deployed worker version for the worker, and each other function\'s own code version', () => {
    // GIVEN/WHEN staging (every function, the post-traffic check included)
    const synth = synthStack('staging');
    const { stack } = synth;
    // THEN
    assert.equal(variablesOf(synth, stack.worker.function).WORKER_VERSION, 'test');
    const others = [
      [stack.worker.preTrafficCheck, 'pre-traffic-check'],
      [stack.worker.postTrafficCheck!, 'post-traffic-check'],
      [stack.invalidator, 'cache-invalidator'],
      [stack.invalidationRepair, 'invalidation-repair'],
      [stack.readApi, 'read-api'],
    ] as const;
    for (const [fn, name] of others) {
      assert.equal(variablesOf(synth, fn).WORKER_VERSION, functionVersion(name), name);
      assert.match(functionVersion(name), /^\d+\.\d+\.\d+\+[0-9a-f]{8}$/, name);
    }
    // AND a change to one function's bundle moves its version alone: they are all different
    assert.equal(new Set(others.map(([, name]) => functionVersion(name))).size, others.length);
  });
});
