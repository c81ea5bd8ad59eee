import { ballast } from './ballast.ts';
import { bare } from './bare.ts';
import { powertools } from './powertools.ts';
import { transaction } from './transaction.ts';
import type { Variant } from './types.ts';

/** The contenders, in the order the table lists them. */
export const VARIANTS = { bare, powertools, transaction, ballast } satisfies Record<string, Variant>;
export type VariantName = keyof typeof VARIANTS;

export const VARIANT_LABELS: Record<VariantName, string> = {
  bare: 'bare handler, one `UpdateItem`, no idempotency',
  powertools: 'Powertools idempotency + `BatchProcessor` (+ Middy, logger, metrics)',
  transaction: 'hand-written: one `TransactWriteItems` per record',
  ballast: 'ballast: `sqsJobBatch` + `IdempotencyStore` + the credit job',
};
