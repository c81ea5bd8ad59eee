import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { customTrafficRouting, predefinedTrafficRouting, trafficMinutes, trafficSteps } from '../../local/codedeploy/traffic.ts';
import { runDeployment, type DeploymentOptions } from '../../local/codedeploy/deployment.ts';
import { AliasRouting, type LocalVersion } from '../../local/cloud/alias-routing.ts';
import type { LocalDeploymentGroup } from '../../local/cloud/provision.ts';
import type { FunctionRuntime } from '../../local/lambda/function-runtime.ts';

const version = (number: string): LocalVersion => ({ version: number, runtime: {} as FunctionRuntime });

describe('local CodeDeploy: traffic routing', () => {
  it('reads the predefined Lambda configs', () => {
    assert.deepEqual(trafficSteps(predefinedTrafficRouting('CodeDeployDefault.LambdaAllAtOnce')), [{ weight: 1, holdMinutes: 0 }]);
    assert.deepEqual(trafficSteps(predefinedTrafficRouting('CodeDeployDefault.LambdaCanary10Percent5Minutes')), [{ weight: 0.1, holdMinutes: 5 }, { weight: 1, holdMinutes: 0 }]);
    const linear = trafficSteps(predefinedTrafficRouting('CodeDeployDefault.LambdaLinear10PercentEvery1Minute'));
    assert.equal(linear.length, 10);
    assert.deepEqual(linear.slice(0, 2), [{ weight: 0.1, holdMinutes: 1 }, { weight: 0.2, holdMinutes: 1 }]);
    assert.deepEqual(linear.at(-1), { weight: 1, holdMinutes: 0 });
    assert.equal(trafficMinutes(linear), 9);
    assert.throws(() => predefinedTrafficRouting('CodeDeployDefault.OneAtATime'), /is not a predefined Lambda config/);
  });

  it('reads a custom DeploymentConfig resource and refuses what CodeDeploy refuses', () => {
    const canary = customTrafficRouting({ ComputePlatform: 'Lambda', TrafficRoutingConfig: { Type: 'TimeBasedCanary', TimeBasedCanary: { CanaryPercentage: 25, CanaryInterval: 3 } } }, 'Custom');
    assert.deepEqual(trafficSteps(canary), [{ weight: 0.25, holdMinutes: 3 }, { weight: 1, holdMinutes: 0 }]);
    const linear = customTrafficRouting({ TrafficRoutingConfig: { Type: 'TimeBasedLinear', TimeBasedLinear: { LinearPercentage: 40, LinearInterval: 2 } } }, 'Custom');
    assert.deepEqual(trafficSteps(linear), [{ weight: 0.4, holdMinutes: 2 }, { weight: 0.8, holdMinutes: 2 }, { weight: 1, holdMinutes: 0 }]);
    assert.throws(() => customTrafficRouting({ TrafficRoutingConfig: { Type: 'TimeBasedCanary', TimeBasedCanary: { CanaryPercentage: 0, CanaryInterval: 3 } } }, 'Bad'),
      /deployment config Bad: the percentage must be a whole number from 1 to 99, got 0/);
    assert.throws(() => customTrafficRouting({ ComputePlatform: 'Server' }, 'Ec2'), /is for Server, not Lambda/);
  });
});

describe('local CodeDeploy: one deployment', () => {
  const group: LocalDeploymentGroup = {
    logicalId: 'Deployment', arn: 'arn:aws:codedeploy:us-east-1:000000000000:deploymentgroup:App/Deployment', functionName: 'worker', aliasName: 'live', configName: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
    routing: { type: 'TimeBasedCanary', percentage: 10, intervalMinutes: 5 }, alarms: ['Errors', 'Duration'],
    autoRollbackEvents: ['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_ALARM'], beforeAllowTrafficHook: 'pre', afterAllowTrafficHook: 'post',
  };
  // 5 minutes of deployment time in 60 ms.
  const deploy = (overrides: Partial<DeploymentOptions> & { states?: Record<string, string> } = {}) => {
    const routing = new AliasRouting(version('1'));
    const hooks: string[] = [];
    const weights: number[] = [];
    const states = overrides.states ?? {};
    const outcome = runDeployment({
      deploymentId: 'd-TEST', group, routing, target: version('2'), timeScale: 5_000, alarmPollMs: 5,
      runHook: async (name) => {
        hooks.push(name);
        return 'Succeeded';
      },
      alarmState: (name) => {
        weights.push(routing.additional?.weight ?? (routing.primary.version === '2' ? 1 : 0));
        return { state: states[name] ?? 'OK', reason: `${name} says ${states[name] ?? 'OK'}` };
      },
      ...overrides,
    });
    return { routing, hooks, weights, outcome };
  };

  it('runs the pre-traffic hook, holds the canary step, points the alias at the new version, then runs the post-traffic hook', async () => {
    const { routing, hooks, weights, outcome } = deploy();
    const result = await outcome;
    assert.equal(result.status, 'Succeeded');
    assert.equal(result.rolledBack, false);
    assert.deepEqual(hooks, ['pre', 'post']);
    assert.equal(routing.primary.version, '2');
    assert.equal(routing.additional, undefined);
    assert.ok(weights.includes(0.1), 'the alarms were watched while 10 % went to the new version');
    assert.deepEqual(result.events.map((event) => event.kind), ['created', 'hook', 'hook', 'shift', 'shift', 'hook', 'hook', 'end']);
  });

  it('an alarm in ALARM during the canary stops it and rolls the traffic back, naming the alarm', async () => {
    const states: Record<string, string> = {};
    const { routing, outcome } = deploy({ states });
    setTimeout(() => void (states.Duration = 'ALARM'), 20);
    const result = await outcome;
    assert.equal(result.status, 'Stopped');
    assert.equal(result.alarm, 'Duration');
    assert.equal(result.rolledBack, true);
    assert.equal(result.maxWeight, 0.1);
    assert.match(result.reason, /alarm Duration went into ALARM during the 10 % step/);
    assert.equal(routing.primary.version, '1');
    assert.equal(routing.additional, undefined);
  });

  it('a failed pre-traffic hook fails the deployment before any traffic moves', async () => {
    const { routing, outcome } = deploy({ runHook: async (name) => (name === 'pre' ? 'Failed' : 'Succeeded') });
    const result = await outcome;
    assert.equal(result.status, 'Failed');
    assert.equal(result.hook, 'pre');
    assert.equal(result.maxWeight, 0);
    assert.equal(routing.primary.version, '1');
  });

  it('a failed post-traffic hook rolls back an alias that already moved', async () => {
    const { routing, outcome } = deploy({ runHook: async (name) => (name === 'post' ? 'Failed' : 'Succeeded') });
    const result = await outcome;
    assert.equal(result.status, 'Failed');
    assert.equal(result.maxWeight, 1);
    assert.equal(routing.primary.version, '1', 'back on the previous version');
  });

  it('without the event in AutoRollbackConfiguration, a stopped deployment leaves the traffic where it was, and says so', async () => {
    const routing = new AliasRouting(version('1'));
    const result = await runDeployment({
      deploymentId: 'd-TEST', group: { ...group, autoRollbackEvents: [] }, routing, target: version('2'), timeScale: 5_000, alarmPollMs: 5,
      runHook: async () => 'Succeeded', alarmState: (name) => ({ state: name === 'Errors' ? 'ALARM' : 'OK', reason: 'r' }),
    });
    assert.equal(result.status, 'Stopped');
    assert.equal(result.rolledBack, false);
    assert.match(result.events.map((event) => event.message).join('\n'), /no automatic rollback: AutoRollbackConfiguration does not name DEPLOYMENT_STOP_ON_ALARM/);
  });

  it('fails at once when the group names an alarm the stack does not have', async () => {
    const { outcome } = deploy({ alarmState: (name) => (name === 'Errors' ? { state: 'OK', reason: '' } : undefined) });
    const result = await outcome;
    assert.equal(result.status, 'Failed');
    assert.match(result.reason, /names alarms the stack does not have: Duration/);
  });
});
