import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Envelope } from '../envelope/index.ts';
import type { JobCatalog } from '../workloads/job-types.ts';
import { ProducerConfigurationError } from './errors.ts';
import { buildJob, jobBuilder, type JobBuilder, type JobRequest } from './jobs.ts';
import { sendEnvelopes, type SendOptions, type SendResult } from './send.ts';

export interface JobProducerOptions<C extends JobCatalog = JobCatalog> extends Omit<SendOptions, 'onProgress'> {
  /** Created once per process and shared (SDK credential, region and endpoint resolution apply). */
  readonly sqs: SQSClient;
  /** The stack's `JobsQueueUrl` output. */
  readonly queueUrl: string;
  /** The job types it builds: the registry's `catalog` (or one workload's `defineJobTypes`). */
  readonly catalog: C;
  /** Stamped on every envelope this producer builds, e.g. `billing@1.4.2`. @default 'unknown' */
  readonly producerVersion?: string;
}

/**
 * A producer bound to one queue: a builder typed by its catalog's payload schemas, stamped with
 * its version, and batch sends that retry only the failed entries.
 *
 * @example
 * import { SQSClient } from '@aws-sdk/client-sqs';
 * import { JobProducer } from '@ballast-stack/ballast/producer';
 * import { registry } from './registry.ts';
 * const producer = new JobProducer({ sqs: new SQSClient({}), queueUrl: process.env.JOBS_QUEUE_URL!, catalog: registry.catalog, producerVersion: 'shop@2.1.0' });
 * const { sent, failed } = await producer.send([
 *   producer.build('widget.make', { resourceId: 'w-1', idempotencyKey: 'batch-77', payload: { count: 500 } }),
 * ]);
 */
export class JobProducer<C extends JobCatalog = JobCatalog> {
  /** Builds a job of any catalog type, validated against its payload schema. */
  readonly build: JobBuilder<C>;
  readonly #options: JobProducerOptions<C>;

  constructor(options: JobProducerOptions<C>) {
    if (!options.queueUrl || !/^https?:\/\//.test(options.queueUrl)) {
      throw new ProducerConfigurationError(`JobProducer: queueUrl must be the queue's URL (the stack output JobsQueueUrl), got '${options.queueUrl}'`);
    }
    if (!options.catalog || Object.keys(options.catalog).length === 0) {
      throw new ProducerConfigurationError('JobProducer: catalog must name the job types it builds (the registry catalog, or one workload job types)');
    }
    this.#options = { ...options };
    this.build = jobBuilder(options.catalog, { producerVersion: options.producerVersion });
  }

  /** A job whose type is only known at run time (e.g. read from a file), validated against the catalog. */
  job(request: JobRequest): Envelope {
    return buildJob(this.#options.catalog, { producerVersion: this.#options.producerVersion, ...request });
  }

  /** Sends envelopes in batches; see {@link sendEnvelopes}. */
  send(envelopes: readonly Envelope[], onProgress?: SendOptions['onProgress']): Promise<SendResult> {
    const { sqs, queueUrl, producerVersion: _version, catalog: _catalog, ...sendOptions } = this.#options;
    return sendEnvelopes(sqs, queueUrl, envelopes, { ...sendOptions, ...(onProgress ? { onProgress } : {}) });
  }
}
