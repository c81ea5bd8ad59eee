import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import { isCacheableId, itemTraceparent, itemVersion, type EntityChange } from '../../shared/cache/index.ts';
import { STATE_TABLE } from '../../shared/tables/index.ts';

/** What one stream record asks of the invalidator. */
export type RecordPlan =
  /** Tombstone this change; `writeTrace` is the `traceparent` of the job that wrote the new image. */
  | { readonly kind: 'apply'; readonly change: EntityChange; readonly writeTrace?: string }
  /** Not an item of a cached entity, or an id that is never cached: nothing can be stale. */
  | { readonly kind: 'ignore'; readonly why: string }
  /** A cached entity's record without what an invalidation needs (a writer or mapping bug). */
  | { readonly kind: 'malformed'; readonly problem: string };

/**
 * Reads the change of a cached entity's item that a DynamoDB stream record (Lambda's event shape,
 * images in AttributeValue JSON) describes. INSERT and MODIFY tombstone the new image's version;
 * REMOVE tombstones the old version + 1, so a late fill of the deleted item (which carries at most
 * the old version) is refused. The entity and id come from the key (`pk = <entity>#<id>`), which
 * is what readers look up by; an item of any other prefix is not cached and is ignored.
 *
 * @param cachedEntities - the names of the registered cached entities
 */
export function planRecord(record: DynamoDBRecord, cachedEntities: ReadonlySet<string>): RecordPlan {
  const pk = attribute(record.dynamodb?.Keys, STATE_TABLE.partitionKey);
  if (typeof pk !== 'string') return { kind: 'malformed', problem: `the record has no string key '${STATE_TABLE.partitionKey}'` };
  const separator = pk.indexOf('#');
  const entity = separator < 0 ? '' : pk.slice(0, separator);
  if (!cachedEntities.has(entity)) return { kind: 'ignore', why: 'not an item of a cached entity' };
  const id = pk.slice(separator + 1);
  if (!isCacheableId(id)) return { kind: 'ignore', why: 'id is never cached' };
  switch (record.eventName) {
    case 'INSERT':
    case 'MODIFY': {
      const image = readImage(record.dynamodb?.NewImage);
      const version = itemVersion(image);
      if (version === undefined) return { kind: 'malformed', problem: `${record.eventName} record without a NewImage carrying an integer version` };
      const committedAtMs = typeof image?.updatedAt === 'string' ? Date.parse(image.updatedAt) : Number.NaN;
      const writeTrace = itemTraceparent(image);
      return { kind: 'apply', change: { entity, id, version, ...(Number.isNaN(committedAtMs) ? {} : { committedAtMs }) }, ...(writeTrace ? { writeTrace } : {}) };
    }
    case 'REMOVE': {
      const version = itemVersion(readImage(record.dynamodb?.OldImage));
      if (version === undefined) return { kind: 'malformed', problem: 'REMOVE record without an OldImage carrying an integer version' };
      return { kind: 'apply', change: { entity, id, version: version + 1 } };
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
