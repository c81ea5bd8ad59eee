import { safeParse, type Schema } from '../validation/index.ts';
import { MalformedItemError } from './errors.ts';
import { TRACE_ATTRIBUTE } from '../tracing/index.ts';

/** What every cached value carries: the item's version (+1 per committed change), which fills and invalidations compare. */
export interface CachedValue {
  readonly version: number;
}

/**
 * An entity a workload caches: items of the state table with `pk = <name>#<id>` and an integer
 * `version` that every committed change raises. The framework caches, invalidates and reconciles
 * every registered entity the same way; the entity says only what its cached value is.
 */
export interface CachedEntity<T extends CachedValue = CachedValue> {
  /**
   * Lowercase, e.g. `'widget'`: the items' key prefix (`widget#<id>`) and the cache keys'
   * (`widget:{<id>}:v<schemaVersion>`).
   */
  readonly name: string;
  /**
   * Version of the cached format (the value and the hash layout). Bump it whenever `schema`'s
   * output changes: new readers then use new keys and can never read an entry written in the old
   * format; old entries simply expire with their TTL. In the same change add the old number to
   * `olderSchemaVersions`, so the new invalidator keeps invalidating the keys old readers still use
   * during the rollout (deploy the invalidator no later than the readers); remove it once no old
   * reader is left.
   */
  readonly schemaVersion: number;
  /** Schema versions still read by a previous deployment; the invalidator invalidates them too. @default [] */
  readonly olderSchemaVersions?: readonly number[];
  /**
   * The cached value. Parsing a table item (or an unmarshalled stream image) with it is the
   * projection: a `z.object` drops the fields it does not declare (`pk` among them), and an item
   * it refuses is malformed. Its output must keep the item's integer `version`.
   */
  readonly schema: Schema<T>;
  /**
   * The read API's path segment: `GET /<route>/{id}` answers the cached value.
   * @default - not served by the read API
   */
  readonly route?: string;
}

/** The name and route rule: lowercase letters, digits and hyphens, starting with a letter (no `#`, `:`, `{`). */
const NAME = /^[a-z][a-z0-9-]*$/;

/** Declares a cached entity, refusing a name, route or schema version that cannot form safe keys. */
export function defineEntity<T extends CachedValue>(entity: CachedEntity<T>): CachedEntity<T> {
  const fail = (problem: string) => {
    throw new Error(`cached entity '${entity.name}': ${problem}`);
  };
  if (!NAME.test(entity.name)) fail('the name must be lowercase letters, digits and hyphens, starting with a letter');
  if (entity.route !== undefined && !NAME.test(entity.route)) fail(`route '${entity.route}' must be lowercase letters, digits and hyphens, starting with a letter`);
  for (const version of [entity.schemaVersion, ...(entity.olderSchemaVersions ?? [])]) {
    if (!Number.isInteger(version) || version < 1) fail(`schema versions must be integers >= 1, got ${version}`);
  }
  if ((entity.olderSchemaVersions ?? []).includes(entity.schemaVersion)) fail(`olderSchemaVersions must not repeat the current schemaVersion ${entity.schemaVersion}`);
  return entity;
}

/**
 * The schema versions an invalidation of `entity` tombstones: the current one, every older one
 * still read, and the next one. A deployment that bumped the schema and was rolled back leaves
 * its entries behind, and nothing else invalidates them: when it is deployed again its readers
 * would serve values from before the rollback. One more key per invalidation (the same hash slot)
 * keeps them dead.
 */
export function invalidatedSchemaVersions(entity: CachedEntity): number[] {
  return [...new Set([entity.schemaVersion, ...(entity.olderSchemaVersions ?? []), entity.schemaVersion + 1])];
}

/**
 * Projects a state-table item (from GetItem or an unmarshalled stream image) onto `entity`'s
 * cached value.
 *
 * @throws MalformedItemError when the schema refuses the item or its output has no integer version
 */
export function projectItem<T extends CachedValue>(entity: CachedEntity<T>, item: object): T {
  // The writer's trace context is the framework's, never the entity's (a strict schema would refuse it).
  const { [TRACE_ATTRIBUTE]: _writeTrace, ...fields } = item as Record<string, unknown>;
  const parsed = safeParse(entity.schema, fields);
  const problems = parsed.success
    ? (isVersion(parsed.data.version) ? [] : [`version must be an integer >= 0, got ${JSON.stringify(parsed.data.version)}`])
    : parsed.error.issues.map((issue) => `${issue.path.join('.') || '(item)'}: ${issue.message}`);
  if (problems.length > 0) {
    const pk = (item as Record<string, unknown>).pk;
    throw new MalformedItemError(`${entity.name} item ${String(pk)} is malformed: ${problems.join('; ')}`, { context: { entity: entity.name, pk, problems } });
  }
  return (parsed as { data: T }).data;
}

/** The `version` of an item image, if it is a usable one. */
export function itemVersion(item: Record<string, unknown> | undefined): number | undefined {
  const version = item?.version;
  return isVersion(version) ? version : undefined;
}

/** The `traceparent` of the job that last wrote a table item (or a stream image), if it was traced. */
export function itemTraceparent(item: Record<string, unknown> | undefined): string | undefined {
  const traceparent = item?.[TRACE_ATTRIBUTE];
  return typeof traceparent === 'string' ? traceparent : undefined;
}

/** The JSON stored in the entry's `payload` field: the value, and the trace of the write it reflects. */
export function encodeValue(value: CachedValue, writeTrace?: string): string {
  return JSON.stringify(writeTrace ? { ...value, [TRACE_ATTRIBUTE]: writeTrace } : value);
}

/**
 * Reads an entry's payload back; undefined when it does not parse as `entity`'s value with the
 * entry's version (treated as a miss, never served).
 */
export function decodeValue<T extends CachedValue>(entity: CachedEntity<T>, payload: string, version: string | null): T | undefined {
  return decodeEntry(entity, payload, version)?.value;
}

/** {@link decodeValue}, with the `traceparent` of the write the value reflects. */
export function decodeEntry<T extends CachedValue>(entity: CachedEntity<T>, payload: string, version: string | null): { value: T; writeTrace?: string } | undefined {
  try {
    const stored = JSON.parse(payload) as Record<string, unknown>;
    const value = projectItem(entity, stored);
    if (String(value.version) !== version) return undefined;
    const writeTrace = itemTraceparent(stored);
    return writeTrace ? { value, writeTrace } : { value };
  } catch {
    return undefined;
  }
}

function isVersion(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
