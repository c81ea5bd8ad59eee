/**
 * The names of ballast's spans and their attributes: the contract between the instrumentation
 * (`shared/`, `functions/`), the local span store, `ballast trace` and the console. Span names are
 * fixed (the job type is an attribute), so a trace backend groups them and a query names them.
 */
export const SPANS = {
  /** Producer SDK: one per message sent (kind PRODUCER); its context travels as `traceparent`. */
  produce: 'ballast.produce',
  /** From the message's `SentTimestamp` to the invocation that received it (per delivery). */
  queueWait: 'ballast.queue_wait',
  /** One SQS batch (kind CONSUMER): links to every record's producer context. */
  batch: 'ballast.batch',
  /** One delivery of one record (kind CONSUMER), child of its producer context; links to the batch. */
  record: 'ballast.record',
  /** The IN_PROGRESS record + lease locks of an external job. */
  claim: 'ballast.claim',
  /** A retry refused by a held lease: how long the message is hidden to wait for it. */
  lockWait: 'ballast.lock_wait',
  /** The external API call of an external job (kind CLIENT). */
  external: 'ballast.external',
  /** The transaction that commits the job's writes with its idempotency record. */
  commit: 'ballast.commit',
  /** A record sent to the DLQ with its reason. */
  dlqSend: 'ballast.dlq_send',
  /** A retried record's next appearance pushed out (ChangeMessageVisibility). */
  visibilityBackoff: 'ballast.visibility_backoff',
  /** The invalidator's handling of one stream record, child of the trace that wrote the item. */
  streamRecord: 'ballast.stream_record',
  /** The Lua script that writes the tombstone and drops older entries. */
  tombstone: 'ballast.tombstone',
  /** The read API answering one GET (kind SERVER); links to the trace of the write it reflects. */
  read: 'ballast.read',
} as const;

export const ATTRIBUTES = {
  jobId: 'ballast.job.id',
  jobType: 'ballast.job.type',
  idempotencyKey: 'ballast.idempotency_key',
  resource: 'ballast.resource',
  /** SQS ApproximateReceiveCount of this delivery. */
  attempt: 'ballast.attempt',
  workerVersion: 'ballast.worker_version',
  /** processed | duplicate | retry | dead-lettered (records); committed | duplicate | refused (commits). */
  outcome: 'ballast.outcome',
  /** The BallastError reason code of a failure. */
  reason: 'ballast.reason',
  fence: 'ballast.fence',
  lockKeys: 'ballast.lock.keys',
  lockHeldUntilMs: 'ballast.lock.held_until_ms',
  /** On a `lock_wait` span: the record was sent to its queue again as a new message (its last receive met the lock). */
  lockRequeued: 'ballast.lock.requeued',
  backoffSeconds: 'ballast.backoff_seconds',
  /** The cancellation reason codes of a refused transaction, in item order. */
  cancellationReasons: 'ballast.commit.cancellation_reasons',
  commitKind: 'ballast.commit.kind',
  /** Jobs whose one-shot commits shared this commit's transaction (group commit); absent when it had its own. */
  commitGroupSize: 'ballast.commit.group_size',
  /** The commit was answered from the batch's screened record, without a transaction. */
  commitScreened: 'ballast.commit.screened',
  externalName: 'ballast.external.name',
  entity: 'ballast.entity',
  entityId: 'ballast.entity.id',
  version: 'ballast.version',
  /** Commit to tombstone, from the item's `updatedAt`. */
  invalidationLagMs: 'ballast.invalidation.lag_ms',
  /** hit | miss | bypass */
  cacheOutcome: 'ballast.cache.outcome',
  /** The trace id of the commit whose version a read answered. */
  writeTraceId: 'ballast.write.trace_id',
  messageId: 'messaging.message.id',
  messagingSystem: 'messaging.system',
  queue: 'messaging.destination.name',
  streamEventName: 'aws.dynamodb.stream.event_name',
} as const;

/**
 * The state-table attribute that carries the W3C `traceparent` of the job that last wrote the
 * item: the stream hands it to the invalidator, and the cache keeps it beside the value.
 */
export const TRACE_ATTRIBUTE = 'traceparent';

/** The SQS message attribute the producer writes the W3C trace context to. */
export const TRACEPARENT_MESSAGE_ATTRIBUTE = 'traceparent';
