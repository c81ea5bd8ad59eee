/**
 * The local cloud says no where AWS would. The two faults a review found in the template (no
 * CloudWatch publish on the alarm topic, no BatchGetItem through the DynamoDB endpoint) are played
 * twice: on the stack as it is, where the alarm's notification reaches the outbox and the worker's
 * screening read is allowed through the endpoint, and on the same stack with those two grants as
 * they were before the fix, where both are refused, as AWS refused them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { MetricsReader } from '../../shared/operations/metrics.ts';
import type { Evidence } from '../../shared/operations/doctor/evidence.ts';
import { checkResult } from '../helpers/doctor.ts';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { startLocalCloud, type LocalCloud } from '../../local/cloud/index.ts';
import { synthesize, type SynthesizedStack, type Template } from '../../local/cloud/assembly.ts';
import { localClientConfig } from '../../local/engines/index.ts';
import { serveConsoleOf } from '../../local/console/index.ts';
import { JOB_CATALOG } from '../fixtures/workloads/registry.ts';
import { useEngines } from '../helpers/engines.ts';
import { waitForEmptyQueue } from '../helpers/wait.ts';
import { TEST_SETTINGS } from '../helpers/infra.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ONCALL = 'oncall@example.com';

/** The stack's template as it was before the review's fixes: the topic policy only denies plain HTTP, the endpoint admits no BatchGetItem. */
function beforeTheFix(template: Template): Template {
  const copy = structuredClone(template) as Template;
  for (const resource of Object.values(copy.Resources)) {
    const document = resource.Properties?.PolicyDocument as { Statement: { Sid?: string; Action?: unknown }[] } | undefined;
    if (!document) continue;
    if (resource.Type === 'AWS::SNS::TopicPolicy') document.Statement = document.Statement.filter((statement) => statement.Sid !== 'CloudWatchAlarmsPublish');
    if (resource.Type === 'AWS::EC2::VPCEndpoint') {
      for (const statement of document.Statement) {
        if (Array.isArray(statement.Action)) statement.Action = statement.Action.filter((action) => action !== 'dynamodb:BatchGetItem');
      }
    }
  }
  return copy;
}

/** `template` with every grant of `action` taken out of its roles' policies. */
function withoutGrant(template: Template, action: string): Template {
  const copy = structuredClone(template) as Template;
  for (const resource of Object.values(copy.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const document = resource.Properties?.PolicyDocument as { Statement: { Action?: unknown }[] };
    document.Statement = document.Statement.filter((statement) => ![statement.Action].flat().includes(action));
  }
  return copy;
}

describe('local IAM: the calls AWS would refuse are refused locally', { timeout: 240_000 }, () => {
  const local = useEngines();
  let stack: SynthesizedStack;
  const copies: string[] = [];
  before(async () => {
    [stack] = (await synthesize({ context: { env: 'local', alarmEmail: ONCALL, ...TEST_SETTINGS } })) as [SynthesizedStack];
  });
  after(() => {
    for (const dir of [...copies, stack.assemblyDir]) rmSync(dir, { recursive: true, force: true });
  });

  /** A cloud of `template` (its own copy of the assembly: a cloud removes its assembly when it stops), 60× faster metric time. */
  async function cloudOf(template: Template, logs: string[]): Promise<LocalCloud> {
    const dir = mkdtempSync(join(tmpdir(), 'ballast-iam-'));
    copies.push(dir);
    cpSync(stack.assemblyDir, dir, { recursive: true });
    return startLocalCloud({
      engines: local.engines, stack: { ...stack, template, assemblyDir: dir }, timeScale: 60, onLog: (line) => void logs.push(line),
    });
  }

  /**
   * Thirty jobs, then the same thirty twice more: the resent ones meet their records, so the
   * worker's sandboxes start screening their batches (one BatchGetItem on the control table), and
   * the duplicate alarm trips.
   */
  async function resentJobs(cloud: LocalCloud, prefix: string): Promise<void> {
    const queueUrl = cloud.resources.outputs.JobsQueueUrl as string;
    const bodies = Array.from({ length: 30 }, (_, i) => JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: `acc-${prefix}-${i % 5}`, idempotencyKey: `${prefix}-${i}`, payload: { amount: 1 } })));
    for (let round = 0; round < 3; round += 1) {
      for (let batch = 0; batch < 3; batch += 1) {
        await local.sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: bodies.slice(batch * 10, batch * 10 + 10).map((body, i) => ({ Id: String(i), MessageBody: body })) }));
      }
      await waitForEmptyQueue(local.sqs, queueUrl, 60_000);
    }
  }

  /** Waits (at most 60 s) for `done`. */
  async function until(done: () => boolean): Promise<boolean> {
    for (let i = 0; i < 120 && !done(); i += 1) await sleep(500);
    return done();
  }

  it('the stack as it is: the duplicate alarm fires and its notification reaches the on-call outbox; the worker screens through the endpoint', async () => {
    const logs: string[] = [];
    const cloud = await cloudOf(stack.template, logs);
    try {
      assert.equal(cloud.enforcingIam, true);
      await resentJobs(cloud, 'iam-allowed');
      const delivered = () => cloud.sns.outbox().find((delivery) => delivery.subject.startsWith('ALARM') && /Duplicate/i.test(delivery.subject));
      assert.ok(await until(() => Boolean(delivered())), JSON.stringify({ outbox: cloud.sns.outbox(), refused: cloud.sns.refusals() }));
      const delivery = delivered();
      assert.equal(delivery?.protocol, 'email');
      assert.equal(delivery?.endpoint, ONCALL);
      assert.equal((JSON.parse(delivery?.message ?? '{}') as { NewStateValue?: string }).NewStateValue, 'ALARM');
      const summary = cloud.authorizer.summary();
      assert.ok((summary.byAction['dynamodb:BatchGetItem']?.allowed ?? 0) > 0, `the worker's screening read was authorized: ${JSON.stringify(summary.byAction)}`);
      assert.deepEqual(summary.latestRefusals, [], 'nothing the stack does is refused');
      assert.ok(!logs.some((line) => line.includes('screening the batch')), 'no screen failed');
    } finally {
      await cloud.stop({ graceMs: 2_000 });
    }
  });

  it('the pre-traffic hook calls Lambda and CodeDeploy as its role: without its invoke grant, the readiness check fails as it would on AWS', async () => {
    const logs: string[] = [];
    const allowed = await cloudOf(stack.template, logs);
    try {
      assert.deepEqual(allowed.preTrafficChecks.map((check) => check.status), ['Succeeded']);
      const { byAction } = allowed.authorizer.summary();
      assert.ok((byAction['lambda:InvokeFunction']?.allowed ?? 0) > 0 && (byAction['codedeploy:PutLifecycleEventHookExecutionStatus']?.allowed ?? 0) > 0, JSON.stringify(byAction));
    } finally {
      await allowed.stop({ graceMs: 2_000 });
    }
    const refused = await cloudOf(withoutGrant(stack.template, 'lambda:InvokeFunction'), logs);
    try {
      assert.deepEqual(refused.preTrafficChecks.map((check) => check.status), ['Failed']);
      const invoke = refused.authorizer.summary().latestRefusals.find((decision) => decision.action === 'lambda:InvokeFunction');
      assert.match(invoke?.reason ?? '', /because no identity-based policy or resource-based policy .* allows the lambda:InvokeFunction action|because no identity-based policy allows the lambda:InvokeFunction action/);
      assert.match(invoke?.principal ?? '', /assumed-role\/.*PreTraffic.*\//);
    } finally {
      await refused.stop({ graceMs: 2_000 });
    }
  });

  it('the grants as they were before the fix: the screening read is refused by the endpoint policy, the notification by the topic policy, and the alarm\'s history says so', async () => {
    const logs: string[] = [];
    const cloud = await cloudOf(beforeTheFix(stack.template), logs);
    try {
      await resentJobs(cloud, 'iam-refused');
      assert.ok(await until(() => cloud.sns.refusals().length > 0 && cloud.alarms.actionFailures().length > 0), JSON.stringify(cloud.sns.summary()));
      // the screen: refused as AWS words it, and the worker's own handling ran (a WARN, its commits find the duplicates)
      const screen = cloud.authorizer.summary().latestRefusals.find((decision) => decision.action === 'dynamodb:BatchGetItem');
      assert.ok(screen, JSON.stringify(cloud.authorizer.summary()));
      assert.match(screen.reason, /because no VPC endpoint policy allows the dynamodb:BatchGetItem action/);
      assert.match(screen.principal, /^arn:aws:sts::\d{12}:assumed-role\/.+Worker.+\//);
      assert.ok(logs.some((line) => line.includes('screening the batch') && line.includes('AccessDeniedException')), 'the worker logged the refused screen');
      // the notification: refused, nothing in the outbox, the alarm's history has the failed action
      const [refused] = cloud.sns.refusals();
      assert.equal(refused?.decision.principal, 'cloudwatch.amazonaws.com');
      assert.match(refused?.decision.reason ?? '', /no identity-based policy or resource-based policy .* allows the sns:Publish action/);
      assert.deepEqual(cloud.sns.outbox().filter((delivery) => delivery.subject.startsWith('ALARM')), []);
      // (read as `ballast status` and `doctor` read it, from the alarms' history)
      const cloudWatch = new CloudWatchClient({ ...localClientConfig(cloud.cloudWatchUrl) });
      const notifications = await new MetricsReader(cloudWatch).alarmNotifications('ballast-local', 60);
      cloudWatch.destroy();
      assert.ok(notifications.ok && notifications.value.failed.some((failure) => /Failed to execute action .*not authorized to perform: sns:Publish/.test(failure.summary)), JSON.stringify(notifications));
      assert.equal(checkResult('notifications', { options: { windowMinutes: 60 }, notifications } as unknown as Evidence)?.verdict, 'fail');
      // (and the console's alarms tab lists it)
      const consoleEndpoint = await serveConsoleOf(cloud, local.engines, JOB_CATALOG);
      try {
        const { notifications: shown } = await (await fetch(`${consoleEndpoint.url}/api/alarms`)).json() as { notifications: { refused: number; refusals: { message: string }[] } };
        assert.ok(shown.refused > 0 && shown.refusals.some((refusal) => /sns:Publish/.test(refusal.message)), JSON.stringify(shown));
      } finally {
        await consoleEndpoint.stop();
      }
    } finally {
      await cloud.stop({ graceMs: 2_000 });
    }
  });
});
