import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Envelope } from '../envelope/index.ts';
import { ProducerConfigurationError } from './errors.ts';
import { buildJob, creditJob, debitJob, syncProfileJob, type BalanceChangeJob, type JobRequest, type SyncProfileJob } from './jobs.ts';
import { sendEnvelopes, type SendOptions, type SendResult } from './send.ts';

export interface JobProducerOptions extends Omit<SendOptions, 'onProgress'> {
  /** Created once per process and shared (SDK credential, region and endpoint resolution apply). */
  readonly sqs: SQSClient;
  /** The stack's `JobsQueueUrl` output. */
  readonly queueUrl: string;
  /** Stamped on every envelope this producer builds, e.g. `billing@1.4.2`. @default 'unknown' */
  readonly producerVersion?: string;
}

/**
 * A producer bound to one queue: typed builders stamped with its version, and batch sends that
 * retry only the failed entries.
 *
 * @example
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { JobProducer } from 'ballast';
 * const producer = new JobProducer({ sqs: new SQSClient({}), queueUrl: process.env.JOBS_QUEUE_URL!, producerVersion: 'billing@1.4.2' });
 * const { sent, failed } = await producer.send([
 *   producer.credit({ accountId: 'acc-1', amount: 500, idempotencyKey: 'deposit-9' }),
 *   producer.syncProfile({ accountId: 'acc-1' }),
 * ]);
 */
export class JobProducer {
  readonly #options: JobProducerOptions;

  constructor(options: JobProducerOptions) {
    if (!options.queueUrl || !/^https?:\/\//.test(options.queueUrl)) {
      throw new ProducerConfigurationError(`JobProducer: queueUrl must be the queue's URL (the stack output JobsQueueUrl), got '${options.queueUrl}'`);
    }
    this.#options = { ...options };
  }

  credit(input: BalanceChangeJob): Envelope {
    return creditJob({ producerVersion: this.#options.producerVersion, ...input });
  }

  debit(input: BalanceChangeJob): Envelope {
    return debitJob({ producerVersion: this.#options.producerVersion, ...input });
  }

  syncProfile(input: SyncProfileJob): Envelope {
    return syncProfileJob({ producerVersion: this.#options.producerVersion, ...input });
  }

  /** Any shipped job type by name, validated against its payload schema. */
  job(request: JobRequest): Envelope {
    return buildJob({ producerVersion: this.#options.producerVersion, ...request });
  }

  /** Sends envelopes in batches; see {@link sendEnvelopes}. */
  send(envelopes: readonly Envelope[], onProgress?: SendOptions['onProgress']): Promise<SendResult> {
    const { sqs, queueUrl, producerVersion: _version, ...sendOptions } = this.#options;
    return sendEnvelopes(sqs, queueUrl, envelopes, { ...sendOptions, ...(onProgress ? { onProgress } : {}) });
  }
}
