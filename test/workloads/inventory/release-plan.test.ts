import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createEnvelope } from '../../../shared/envelope/index.ts';
import { FatalError } from '../../../shared/errors/index.ts';
import { INVENTORY_REASONS, STOCK_JOBS } from '../../../workloads/inventory/index.ts';
import { releaseJob } from '../../../workloads/inventory/jobs/index.ts';

describe('stock.release plan', () => {
  it('refuses a reservation missing at its read, so it can never commit a release that changed nothing', async () => {
    // A reserve that commits between this read and the release's transaction must not let the
    // release "complete" with no effect (the chaos run's stock ledger found exactly that).
    const documents = { send: async () => ({}) } as unknown as DynamoDBDocumentClient;
    const envelope = createEnvelope({ type: STOCK_JOBS.release, resourceId: 'sku-1', idempotencyKey: 'cancel-1', payload: { reservationId: 'res-late' } });
    const job = releaseJob({ stateTableName: 'state', documents });
    await assert.rejects(Promise.resolve(job.plan({ envelope, payload: { reservationId: 'res-late' } } as never)), (error: unknown) =>
      error instanceof FatalError && error.reason === INVENTORY_REASONS.reservationNotFound);
  });
});
