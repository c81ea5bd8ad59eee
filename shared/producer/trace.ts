import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { Envelope } from '../envelope/index.ts';
import { ATTRIBUTES, messageAttributesOf, SPANS, tracer } from '../tracing/index.ts';

/** SQS's cap on message attributes per message. */
const MAX_MESSAGE_ATTRIBUTES = 10;
const X_RAY_HEADER = 'x-amzn-trace-id';

/** A message's produce span and the attributes that carry its context to the worker. */
export interface ProduceTrace {
  /** Ended by the sender when SQS accepted the message or finally refused it. */
  readonly span: Span;
  /** The caller's attributes plus the message's own trace context (`traceparent`). */
  readonly attributes: Record<string, MessageAttributeValue>;
  /** X-Ray's trace header, to send as the `AWSTraceHeader` system attribute. */
  readonly awsTraceHeader?: string;
}

/**
 * Starts one PRODUCER span for a message (child of whatever is active: an API request's span,
 * say) and the message attributes that carry it. Without an envelope (a body that is not one)
 * the span has no job attributes. A caller already using all ten attributes keeps them,
 * untraced: SQS would refuse an eleventh.
 */
export function startProduce(envelope: Envelope | undefined, queueName: string, attributes: Record<string, MessageAttributeValue> = {}): ProduceTrace {
  const span = tracer().startSpan(SPANS.produce, {
    kind: SpanKind.PRODUCER,
    attributes: {
      [ATTRIBUTES.messagingSystem]: 'aws_sqs', [ATTRIBUTES.queue]: queueName,
      ...(envelope ? {
        [ATTRIBUTES.jobId]: envelope.jobId, [ATTRIBUTES.jobType]: envelope.type,
        [ATTRIBUTES.idempotencyKey]: envelope.idempotencyKey, [ATTRIBUTES.resource]: envelope.resourceId,
      } : {}),
    },
  });
  const carried = messageAttributesOf(trace.setSpan(context.active(), span));
  // X-Ray's header (when the X-Ray propagator is registered) is SQS's own system attribute, not a message attribute.
  const xRay = Object.keys(carried).find((name) => name.toLowerCase() === X_RAY_HEADER);
  const awsTraceHeader = xRay ? carried[xRay]?.StringValue : undefined;
  if (xRay) delete carried[xRay];
  return { span, attributes: withTraceContext(attributes, carried, span), ...(awsTraceHeader ? { awsTraceHeader } : {}) };
}

function withTraceContext(attributes: Record<string, MessageAttributeValue>, carried: Record<string, MessageAttributeValue>, span: Span): Record<string, MessageAttributeValue> {
  const names = Object.keys(carried).filter((name) => !(name in attributes));
  if (names.length === 0) return attributes;
  if (Object.keys(attributes).length + names.length > MAX_MESSAGE_ATTRIBUTES) {
    span.addEvent('trace context not propagated: the message already has 10 attributes');
    return attributes;
  }
  return { ...attributes, ...Object.fromEntries(names.map((name) => [name, carried[name] as MessageAttributeValue])) };
}

/** Ends a produce span whose message SQS accepted, naming the message. */
export function endSent(span: Span, messageId: string | undefined): void {
  span.setAttribute(ATTRIBUTES.messageId, messageId ?? '');
  span.end();
}

/** Ends a produce span whose message was not sent. */
export function endFailed(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.end();
}

/** The SendMessage(Batch) entry fields that carry a produce trace. */
export function tracedEntryFields(traced: Omit<ProduceTrace, 'span'>) {
  return {
    ...(Object.keys(traced.attributes).length > 0 ? { MessageAttributes: traced.attributes } : {}),
    ...(traced.awsTraceHeader ? { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String' as const, StringValue: traced.awsTraceHeader } } } : {}),
  };
}
