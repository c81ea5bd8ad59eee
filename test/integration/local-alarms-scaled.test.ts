import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { createEnvelope } from '../../shared/envelope/index.ts';
import { startLocalCloud, type LocalCloud } from '../../local/cloud/index.ts';
import type { AlarmTransition } from '../../local/cloudwatch/index.ts';
import { useEngines } from '../helpers/engines.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Its own engines: another local cloud of the same stack would poll the same queues.
describe('local cloud alarms', () => {
  const local = useEngines();
  describe('with a time scale', () => {
    let scaled: LocalCloud;
    const transitions: AlarmTransition[] = [];
    before(async () => {
      scaled = await startLocalCloud({ engines: local.engines, timeScale: 60, onAlarm: (transition) => transitions.push(transition) });
      local.beforeStop(() => scaled.stop({ graceMs: 5_000 }));
    });

    it('plays a 5-minute alarm period in seconds: the duplicate burst trips the alarm on its own, printed as a transition', async () => {
      const body = JSON.stringify(createEnvelope({ type: 'account.credit', resourceId: 'acc-fast', idempotencyKey: 'dup-fast', payload: { amount: 1 } }));
      const queueUrl = scaled.resources.outputs.JobsQueueUrl as string;
      for (let batch = 0; batch < 2; batch += 1) {
        await local.sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: Array.from({ length: 10 }, (_, i) => ({ Id: String(i), MessageBody: body })) }));
      }
      // 5 minutes of metric time (and its evaluation) is 5 s of real time at 60×; wait at most 60 s
      for (let i = 0; i < 120 && !transitions.some((t) => /Duplicate/i.test(t.name) && t.to === 'ALARM'); i += 1) await sleep(500);
      const tripped = transitions.find((t) => /Duplicate/i.test(t.name) && t.to === 'ALARM');
      assert.ok(tripped, JSON.stringify(scaled.alarms.statuses().filter((a) => /Duplicate/i.test(a.name))));
      assert.match(tripped.reason, /\[9\d(\.\d+)?\] GreaterThanOrEqualToThreshold 20/);
    });
  });
});
