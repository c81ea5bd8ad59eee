import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DOCTOR_DEFAULTS, type Evidence } from '../../shared/operations/doctor/evidence.ts';
import type { AlarmNotifications, MetricsAnswer } from '../../shared/operations/metrics.ts';
import { checkResult } from '../helpers/doctor.ts';

// Only the fields the notifications check reads.
const evidence = (notifications: MetricsAnswer<AlarmNotifications>) => ({ options: DOCTOR_DEFAULTS, notifications }) as unknown as Evidence;
const notifications = (e: Evidence) => checkResult('notifications', e);

describe('doctor: do the alarms\' notifications reach on-call?', () => {
  it('fails on a notification the topic refused, though every alarm looks healthy: it names the alarm and the refusal, and what the topic policy must allow', () => {
    const verdict = notifications(evidence({ ok: true, value: { sent: 3, failed: [{ alarm: 'ballast-prod-JobsQueue-DLQ', summary: 'Failed to execute action arn:aws:sns:eu-west-1:1:alarms. Received error: "… not authorized to perform: SNS:Publish …"' }] } }));
    assert.equal(verdict?.verdict, 'fail');
    assert.match(verdict?.evidence.join('\n') ?? '', /3 sent, 1 failed[\s\S]*ballast-prod-JobsQueue-DLQ: Failed to execute action/);
    assert.match(verdict?.next ?? '', /cloudwatch\.amazonaws\.com to sns:Publish/);
  });

  it('is ok when every notification went out, and unknown without the alarms\' history', () => {
    assert.equal(notifications(evidence({ ok: true, value: { sent: 2, failed: [] } }))?.verdict, 'ok');
    assert.equal(notifications(evidence({ ok: false, why: 'no CloudWatch endpoint' }))?.verdict, 'unknown');
  });
});
