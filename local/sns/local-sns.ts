/**
 * The stack's SNS topics, locally: a publish is authorized as AWS would (the topic's policy, for
 * a service such as CloudWatch publishing an alarm's notification), counted in the topic's
 * `AWS/SNS` metrics, and delivered to each of the topic's subscriptions from the template. No
 * mail leaves the machine: every delivery lands in the outbox, whatever its protocol, where the
 * console, `ballast status` and the tests read it.
 */
import type { Authorizer, CallPrincipal, Decision } from '../iam/authorizer.ts';
import type { LocalSubscription, StackIam } from '../iam/template.ts';
import type { MetricSeries } from '../cloudwatch/index.ts';

/** One delivery of a notification to one subscription. */
export interface Delivery {
  readonly topicArn: string;
  readonly protocol: string;
  readonly endpoint: string;
  readonly subject: string;
  readonly message: string;
  /** Epoch ms, real time. */
  readonly atMs: number;
}

/** A publish the topic refused. */
export interface RefusedPublish {
  readonly topicArn: string;
  readonly subject: string;
  /** What the publisher acted for (an alarm's ARN), if a service. */
  readonly sourceArn?: string;
  readonly decision: Decision;
  readonly atMs: number;
}

export interface LocalSnsOptions {
  readonly iam: () => StackIam;
  readonly authorizer: Authorizer;
  readonly series?: MetricSeries;
  readonly clock?: () => number;
}

/** How many of each kind are kept (the newest). */
const KEPT = 200;

export class LocalSns {
  readonly #options: LocalSnsOptions;
  readonly #outbox: Delivery[] = [];
  readonly #refused: RefusedPublish[] = [];
  #published = 0;
  #refusedCount = 0;

  constructor(options: LocalSnsOptions) {
    this.#options = options;
  }

  /** Publishes to `topicArn` as `principal`; resolves to the deliveries made, or the refusal. */
  async publish(principal: CallPrincipal, topicArn: string, subject: string, message: string): Promise<{ readonly delivered: readonly Delivery[] } | { readonly refused: RefusedPublish }> {
    const iam = this.#options.iam();
    const topic = iam.topics.get(topicArn);
    const atMs = Date.now();
    const decision = topic
      ? await this.#options.authorizer.authorize(principal, { action: 'sns:Publish', resource: topicArn })
      : { allowed: false, action: 'sns:Publish', resource: topicArn, principal: principal.kind === 'service' ? principal.service : principal.functionArn, reason: 'because the topic does not exist (NotFound)' };
    if (!decision.allowed) {
      const refused = { topicArn, subject, ...(principal.kind === 'service' ? { sourceArn: principal.sourceArn } : {}), decision, atMs };
      this.#refusedCount += 1;
      keep(this.#refused, refused);
      return { refused };
    }
    this.#published += 1;
    const subscriptions = iam.subscriptions.filter((subscription: LocalSubscription) => subscription.topicArn === topicArn);
    const delivered = subscriptions.map((subscription) => ({ topicArn, protocol: subscription.protocol, endpoint: subscription.endpoint, subject, message, atMs }));
    for (const delivery of delivered) keep(this.#outbox, delivery);
    this.#record(topic?.name ?? topicArn, delivered.length);
    return { delivered };
  }

  /** Every delivery so far (the newest {@link KEPT}), oldest first. */
  outbox(): readonly Delivery[] {
    return [...this.#outbox];
  }

  /** Publishes refused so far (the newest kept), oldest first. */
  refusals(): readonly RefusedPublish[] {
    return [...this.#refused];
  }

  summary(): { readonly published: number; readonly delivered: number; readonly refused: number } {
    return { published: this.#published, delivered: this.#outbox.length, refused: this.#refusedCount };
  }

  #record(topicName: string, deliveries: number): void {
    const { series, clock = Date.now } = this.#options;
    if (!series) return;
    const dimensions = { TopicName: topicName };
    const now = clock();
    series.record({ namespace: 'AWS/SNS', name: 'NumberOfMessagesPublished', dimensions }, 1, now);
    series.record({ namespace: 'AWS/SNS', name: 'NumberOfNotificationsDelivered', dimensions }, deliveries, now);
    series.record({ namespace: 'AWS/SNS', name: 'NumberOfNotificationsFailed', dimensions }, 0, now);
  }
}

function keep<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > KEPT) list.splice(0, list.length - KEPT);
}

/** An alarm's state change as CloudWatch words its SNS notification (subject and JSON message). */
export function alarmNotification(alarm: { readonly name: string; readonly arn: string; readonly accountId: string; readonly region: string }, transition: { readonly from: string; readonly to: string; readonly reason: string }, atMs: number): { subject: string; message: string } {
  return {
    subject: `${transition.to}: "${alarm.name}" in ${alarm.region}`.slice(0, 100),
    message: JSON.stringify({
      AlarmName: alarm.name, AlarmArn: alarm.arn, AWSAccountId: alarm.accountId, Region: alarm.region,
      NewStateValue: transition.to, OldStateValue: transition.from, NewStateReason: transition.reason, StateChangeTime: new Date(atMs).toISOString(),
    }),
  };
}
