import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { STATUS } from '../idempotency/index.ts';

/** A lock still owned although its lease ran out: its holder died or stalled. */
export interface OrphanLock {
  readonly resourceId: string;
  readonly ownerToken: string;
  readonly fence: number;
  readonly leaseUntilMs: number;
  readonly expiredForMs: number;
}

/** An IN_PROGRESS idempotency record past its lease: a worker stopped between claim and commit. */
export interface AbandonedClaim {
  readonly idempotencyKey: string;
  readonly jobType: string;
  readonly jobId: string;
  readonly leaseUntilMs: number;
  readonly expiredForMs: number;
}

export interface ControlTableScan {
  readonly scannedItems: number;
  /** False when the scan stopped at `maxItems` before the end of the table. */
  readonly complete: boolean;
  readonly orphanLocks: readonly OrphanLock[];
  readonly heldLocks: number;
  readonly abandonedClaims: readonly AbandonedClaim[];
  readonly liveClaims: number;
}

/**
 * Scans the control table for orphan locks and abandoned claims (past their lease by more than
 * `graceMs`, so a heartbeat in flight is not flagged). Reads at most `maxItems` items.
 */
export async function scanControlTable(
  documents: DynamoDBDocumentClient, tableName: string, nowMs: number, options: { maxItems?: number; graceMs?: number } = {},
): Promise<ControlTableScan> {
  const maxItems = options.maxItems ?? 20_000;
  const cutoffMs = nowMs - (options.graceMs ?? 0);
  const orphanLocks: OrphanLock[] = [];
  const abandonedClaims: AbandonedClaim[] = [];
  let heldLocks = 0;
  let liveClaims = 0;
  let scannedItems = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(new ScanCommand({
      TableName: tableName,
      ExclusiveStartKey: start,
      Limit: Math.min(1000, maxItems - scannedItems),
      FilterExpression: 'attribute_exists(ownerToken)',
    }));
    scannedItems += page.ScannedCount ?? 0;
    for (const item of page.Items ?? []) {
      const pk = String(item.pk ?? '');
      const leaseUntilMs = Number(item.leaseUntilMs ?? 0);
      if (pk.startsWith('lock#')) {
        if (leaseUntilMs < cutoffMs) {
          orphanLocks.push({ resourceId: pk.slice(5), ownerToken: String(item.ownerToken), fence: Number(item.fence ?? 0), leaseUntilMs, expiredForMs: nowMs - leaseUntilMs });
        } else heldLocks += 1;
      } else if (pk.startsWith('idem#') && item.status === STATUS.inProgress) {
        if (leaseUntilMs < cutoffMs) {
          abandonedClaims.push({
            idempotencyKey: pk.slice(5), jobType: String(item.jobType ?? ''), jobId: String(item.jobId ?? ''), leaseUntilMs, expiredForMs: nowMs - leaseUntilMs,
          });
        } else liveClaims += 1;
      }
    }
    start = page.LastEvaluatedKey;
  } while (start && scannedItems < maxItems);
  return { scannedItems, complete: !start, orphanLocks, heldLocks, abandonedClaims, liveClaims };
}
