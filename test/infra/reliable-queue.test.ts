import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { App, Duration, RemovalPolicy, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { ReliableQueue, type ReliableQueueProps } from '../../infra/constructs/reliable-queue.ts';

// Construct-level tests build their own stack: they must not load (or break with) the whole ballast stack.
const testStack = () => new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Test', { env: { account: '123456789012', region: 'eu-west-1' } });
const logicalId = (element: unknown): string => {
  const cfn = element as CfnElement;
  return Stack.of(cfn).resolve(cfn.logicalId) as string; // after synthesis: includes overrides such as a version's hash
};

/**
 * A deploy-time string as text: a plain string as it is, an `Fn::Join` with its literal parts as
 * they are and its tokens as their JSON. `Fn::Join` nests flatten when CDK builds an ARN, so two
 * joins are compared by their text, not by their shape.
 */
function joined(value: unknown): string {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  assert.ok(join && join[0] === '', `not a string or an Fn::Join with no separator: ${JSON.stringify(value)}`);
  return join[1].map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join('');
}

/**
 * The first and last groups of the UUID in the stack's id (arn:…:stack/<name>/<uuid>), as the text
 * {@link joined} gives: unique per stack instance, 8 + 1 + 12 = 21 characters once deployed.
 */
const uuidGroup = (index: number) => JSON.stringify({
  'Fn::Select': [index, { 'Fn::Split': ['-', { 'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }] }] }],
});
const STACK_ID_SUFFIX = `${uuidGroup(0)}-${uuidGroup(4)}`;
const STACK_ID_SUFFIX_LENGTH = 21;

/** Builds a ReliableQueue in an empty stack and returns its template and both queues' resources. */
function build(props: Partial<ReliableQueueProps> = {}, id = 'Jobs') {
  const stack = testStack();
  const jobs = new ReliableQueue(stack, id, { consumerTimeout: Duration.seconds(30), ...props });
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, { Properties: Record<string, any>; DeletionPolicy?: string }>;
  const queueId = logicalId(jobs.queue.node.defaultChild);
  const deadLetterId = logicalId(jobs.deadLetterQueue.node.defaultChild);
  return { jobs, template, queueId, deadLetterId, queue: resources[queueId]!, deadLetter: resources[deadLetterId]! };
}

describe('ReliableQueue', () => {
  for (const fifo of [false, true]) {
    describe(fifo ? 'FIFO' : 'standard', () => {
      it('pairs the queue with a DLQ of the same type that keeps messages longer', () => {
        // GIVEN/WHEN
        const { queue, deadLetter, deadLetterId } = build({ fifo });
        // THEN
        assert.equal(queue.Properties.FifoQueue, fifo ? true : undefined);
        assert.equal(deadLetter.Properties.FifoQueue, fifo ? true : undefined);
        assert.equal(queue.Properties.ContentBasedDeduplication, undefined, 'producers set deduplication ids');
        // SQS's redrive is a backstop 3 receives after the consumer's own dead-lettering (at 5)
        assert.deepEqual(queue.Properties.RedrivePolicy, { deadLetterTargetArn: { 'Fn::GetAtt': [deadLetterId, 'Arn'] }, maxReceiveCount: 8 });
        assert.equal(queue.Properties.MessageRetentionPeriod, Duration.days(4).toSeconds());
        assert.equal(deadLetter.Properties.MessageRetentionPeriod, Duration.days(14).toSeconds());
      });

      it('names the queue after its path and the stack instance, so a recreated stack never meets a retained queue', () => {
        // GIVEN/WHEN
        const { queue } = build({ fifo });
        // THEN not a fixed literal: the name ends in the stack id's suffix${fifo ? ', then .fifo' : ''}
        assert.notEqual(typeof queue.Properties.QueueName, 'string', 'a deploy-time name, not a literal');
        const name = joined(queue.Properties.QueueName);
        assert.ok(name.startsWith('Test-Jobs-'), `${name} starts with the construct path`);
        assert.ok(name.endsWith(`-${STACK_ID_SUFFIX}${fifo ? '.fifo' : ''}`), `${name} ends in the stack instance suffix${fifo ? ' and .fifo' : ''}`);
      });

      it('keeps the name within SQS\'s 80 characters however long the construct path', () => {
        // GIVEN/WHEN a path far beyond 80 characters
        const { queue } = build({ fifo }, 'Jobs'.repeat(30));
        // THEN the literal part leaves room for the stack id's suffix${fifo ? ' and .fifo' : ''}
        const name = joined(queue.Properties.QueueName);
        assert.ok(name.endsWith(`${STACK_ID_SUFFIX}${fifo ? '.fifo' : ''}`), name);
        const literal = name.slice(0, name.indexOf(STACK_ID_SUFFIX));
        assert.ok(literal.length + STACK_ID_SUFFIX_LENGTH + (fifo ? 5 : 0) <= 80, `${literal.length} + ${STACK_ID_SUFFIX_LENGTH}${fifo ? ' + 5' : ''} characters`);
      });

      it('lets only this queue redrive into its DLQ', () => {
        // GIVEN/WHEN
        const { queue, deadLetter } = build({ fifo });
        // THEN the allow policy names the source queue's own ARN, built from the same name
        assert.equal(deadLetter.Properties.RedriveAllowPolicy.redrivePermission, 'byQueue');
        const sources = deadLetter.Properties.RedriveAllowPolicy.sourceQueueArns;
        assert.equal(sources.length, 1);
        assert.equal(joined(sources[0]), `arn:${JSON.stringify({ Ref: 'AWS::Partition' })}:sqs:eu-west-1:123456789012:${joined(queue.Properties.QueueName)}`);
      });

      it('encrypts both queues and denies requests without TLS on both', () => {
        // GIVEN/WHEN
        const { template, queue, deadLetter, queueId, deadLetterId } = build({ fifo });
        // THEN
        assert.equal(queue.Properties.SqsManagedSseEnabled, true);
        assert.equal(deadLetter.Properties.SqsManagedSseEnabled, true);
        for (const id of [queueId, deadLetterId]) {
          template.hasResourceProperties('AWS::SQS::QueuePolicy', {
            Queues: [{ Ref: id }],
            PolicyDocument: {
              Statement: Match.arrayWith([Match.objectLike({
                Effect: 'Deny',
                Action: 'sqs:*',
                Principal: { AWS: '*' },
                Condition: { Bool: { 'aws:SecureTransport': 'false' } },
                Resource: { 'Fn::GetAtt': [id, 'Arn'] },
              })]),
            },
          });
        }
      });

      it('derives the visibility timeout as 6 × consumer timeout + batching window', () => {
        // GIVEN a 30 s consumer with a 5 s batching window
        const { queue } = build({ fifo, maxBatchingWindow: Duration.seconds(5) });
        // THEN
        assert.equal(queue.Properties.VisibilityTimeout, 6 * 30 + 5);
      });

      it('refuses a visibility timeout below 6 × timeout + window, naming the minimum', () => {
        // GIVEN 6 × 30 + 5 = 185 s needed WHEN 184 s is asked THEN refused
        assert.throws(
          () => build({ fifo, maxBatchingWindow: Duration.seconds(5), visibilityTimeout: Duration.seconds(184) }),
          /Test\/Jobs: visibilityTimeout 184 s is below 6 × consumer timeout \(30 s\) \+ batching window \(5 s\) = 185 s: raise visibilityTimeout to at least 185 s/,
        );
        // AND exactly the minimum, or more, is accepted
        assert.equal(build({ fifo, maxBatchingWindow: Duration.seconds(5), visibilityTimeout: Duration.seconds(185) }).queue.Properties.VisibilityTimeout, 185);
        assert.equal(build({ fifo, visibilityTimeout: Duration.minutes(10) }).queue.Properties.VisibilityTimeout, 600);
      });

      it('refuses maxReceiveCount below 5', () => {
        // WHEN/THEN
        assert.throws(() => build({ fifo, maxReceiveCount: 4 }), /maxReceiveCount 4 is below 5: set maxReceiveCount to 5 or more/);
        assert.throws(() => build({ fifo, maxReceiveCount: 5.5 }), /maxReceiveCount 5\.5 is below 5/);
        // AND a higher count reaches the redrive policy, the backstop added
        assert.equal(build({ fifo, maxReceiveCount: 8 }).queue.Properties.RedrivePolicy.maxReceiveCount, 11);
      });

      it('redrives a backstop after the consumer\'s own dead-lettering, so a crash on the last receive keeps its verdict', () => {
        // GIVEN/WHEN a consumer that dead-letters itself on receive 6, with a backstop of 2, or none
        assert.equal(build({ fifo, maxReceiveCount: 6, redriveBackstop: 2 }).queue.Properties.RedrivePolicy.maxReceiveCount, 8);
        assert.equal(build({ fifo, redriveBackstop: 0 }).queue.Properties.RedrivePolicy.maxReceiveCount, 5);
        // THEN a backstop that is not a small whole number is refused
        assert.throws(() => build({ fifo, redriveBackstop: -1 }), /redriveBackstop -1 must be an integer from 0 to 10/);
        assert.throws(() => build({ fifo, redriveBackstop: 1.5 }), /redriveBackstop 1\.5 must be an integer/);
      });

      it('refuses a DLQ that would not outlive the queue', () => {
        // WHEN/THEN
        assert.throws(
          () => build({ fifo, retentionPeriod: Duration.days(14), deadLetterRetentionPeriod: Duration.days(14) }),
          /deadLetterRetentionPeriod \(14 days\) must be longer than retentionPeriod \(14 days\)/,
        );
      });
    });
  }

  it('refuses a visibility timeout beyond SQS\'s 12 hours', () => {
    // GIVEN a consumer timeout whose 6× exceeds 12 h WHEN/THEN
    assert.throws(() => build({ consumerTimeout: Duration.hours(2.5) }), /visibilityTimeout 54000 s exceeds SQS's 12 hours/);
  });

  it('applies the removal policy and encryption it is given to both queues', () => {
    // GIVEN/WHEN
    const { queue, deadLetter } = build({ removalPolicy: RemovalPolicy.RETAIN, encryption: QueueEncryption.KMS_MANAGED });
    // THEN
    for (const resource of [queue, deadLetter]) {
      assert.equal(resource.DeletionPolicy, 'Retain');
      assert.equal(resource.Properties.KmsMasterKeyId, 'alias/aws/sqs');
    }
  });
});
