import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import { isCacheableAccountId, itemVersion, type AccountChange } from '../../shared/cache/index.ts';
import { STATE_TABLE } from '../../shared/tables/index.ts';

const ACCOUNT_PREFIX = 'account#';

/** What one stream record asks of the invalidator. */
export type RecordPlan =
  /** Tombstone this change. */
  | { readonly kind: 'apply'; readonly change: AccountChange }
  /** Not an account, or an id that is never cached: nothing can be stale. */
  | { readonly kind: 'ignore'; readonly why: string }
  /** An account record without what an invalidation needs (a writer or mapping bug). */
  | { readonly kind: 'malformed'; readonly problem: string };

/**
 * Reads the account change a DynamoDB stream record (Lambda's event shape, images in
 * AttributeValue JSON) describes. INSERT and MODIFY tombstone the new image's version; REMOVE
 * tombstones the old version + 1, so a late fill of the deleted item (which carries at most the
 * old version) is refused. The account id comes from the key (`pk = account#<id>`), which is what
 * readers look up by.
 */
export function planRecord(record: DynamoDBRecord): RecordPlan {
  const pk = attribute(record.dynamodb?.Keys, STATE_TABLE.partitionKey);
  if (typeof pk !== 'string') return { kind: 'malformed', problem: `the record has no string key '${STATE_TABLE.partitionKey}'` };
  if (!pk.startsWith(ACCOUNT_PREFIX)) return { kind: 'ignore', why: 'not an account item' };
  const accountId = pk.slice(ACCOUNT_PREFIX.length);
  if (!isCacheableAccountId(accountId)) return { kind: 'ignore', why: 'account id is never cached' };
  switch (record.eventName) {
    case 'INSERT':
    case 'MODIFY': {
      const image = readImage(record.dynamodb?.NewImage);
      const version = itemVersion(image);
      if (version === undefined) return { kind: 'malformed', problem: `${record.eventName} record without a NewImage carrying an integer version` };
      const committedAtMs = typeof image?.updatedAt === 'string' ? Date.parse(image.updatedAt) : Number.NaN;
      return { kind: 'apply', change: { accountId, version, ...(Number.isNaN(committedAtMs) ? {} : { committedAtMs }) } };
    }
    case 'REMOVE': {
      const version = itemVersion(readImage(record.dynamodb?.OldImage));
      if (version === undefined) return { kind: 'malformed', problem: 'REMOVE record without an OldImage carrying an integer version' };
      return { kind: 'apply', change: { accountId, version: version + 1 } };
    }
    default:
      return { kind: 'malformed', problem: `unknown eventName '${String(record.eventName)}'` };
  }
}

function readImage(image: Record<string, AttributeValue> | undefined): Record<string, unknown> | undefined {
  if (!image) return undefined;
  try {
    return unmarshall(image as Record<string, SdkAttributeValue>);
  } catch {
    return undefined; // e.g. a number beyond 2^53: not an image we can compare versions of
  }
}

function attribute(image: Record<string, AttributeValue> | undefined, name: string): unknown {
  return readImage(image)?.[name];
}
