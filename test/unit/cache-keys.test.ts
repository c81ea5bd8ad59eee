import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  CACHE_ID_RULE, decodeValue, defineEntity, encodeValue, entityCacheKeys, idOfValueKey, invalidatedSchemaVersions, InvalidCacheIdError,
  isCacheableId, MalformedItemError, projectItem, valueKeyPattern,
} from '../../shared/cache/index.ts';

/** Cluster hash slot tag: the substring between the first `{` and the next `}`. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  return key.slice(open + 1, key.indexOf('}', open));
}

const order = defineEntity({
  name: 'order',
  schemaVersion: 1,
  schema: z.object({ orderId: z.string(), total: z.number(), version: z.number().int().nonnegative() }),
});

describe('cache keys', () => {
  it('carry the entity, a hash tag with the id and the schema version; the tombstone and the tickets share the tag', () => {
    const keys = entityCacheKeys('account', 'acc-42', 1);
    assert.deepEqual(keys, { value: 'account:{acc-42}:v1', tombstone: 'account:{acc-42}:v1:tomb', tickets: 'account:{acc-42}:v1:tickets' }, 'the format entries of earlier releases use');
    assert.equal(hashTag(keys.value), 'acc-42');
    assert.equal(hashTag(keys.tombstone), 'acc-42');
    assert.equal(hashTag(keys.tickets), 'acc-42');
    assert.equal(entityCacheKeys('order', 'acc-42', 1).value, 'order:{acc-42}:v1', 'entities never share a key');
  });

  it('differ by schema version, within the same slot', () => {
    const v1 = entityCacheKeys('order', 'o-42', 1);
    const v2 = entityCacheKeys('order', 'o-42', 2);
    assert.notEqual(v1.value, v2.value);
    assert.equal(v2.value, 'order:{o-42}:v2');
    assert.equal(hashTag(v1.value), hashTag(v2.value));
  });

  it('refuse ids that could break the hash tag, the separator or a SCAN pattern (fail closed)', () => {
    for (const id of ['', 'a{b', 'a}b', 'a:b', 'a*', 'a?', 'a[1]', ' acc', '-acc', 'x'.repeat(129), 'acc/1', 'a#b']) {
      assert.equal(isCacheableId(id), false, id);
      assert.throws(() => entityCacheKeys('order', id, 1), (error: unknown) => error instanceof InvalidCacheIdError && error.message.includes(CACHE_ID_RULE), id);
    }
    for (const id of ['a', 'acc-42', 'ACC_1.x', '9'.repeat(128)]) assert.equal(isCacheableId(id), true, id);
  });

  it('refuse schema versions that are not positive integers', () => {
    assert.throws(() => entityCacheKeys('order', 'o-1', 0), RangeError);
    assert.throws(() => entityCacheKeys('order', 'o-1', 1.5), RangeError);
  });

  it('the SCAN pattern matches value keys of its entity and version only, and ids round-trip', () => {
    assert.equal(valueKeyPattern('account', 3), 'account:{*}:v3');
    assert.equal(idOfValueKey('account', 'account:{acc-42}:v3', 3), 'acc-42');
    assert.equal(idOfValueKey('account', 'account:{acc-42}:v3:tomb', 3), undefined);
    assert.equal(idOfValueKey('account', 'account:{acc-42}:v2', 3), undefined);
    assert.equal(idOfValueKey('account', 'session:{acc-42}:v3', 3), undefined);
    assert.equal(idOfValueKey('order', 'order-line:{o-1}:v3', 3), undefined, 'a longer entity name is another entity');
  });
});

describe('cached entities', () => {
  it('refuse names, routes and schema versions that cannot form safe keys, naming the entity', () => {
    const schema = z.object({ version: z.number() });
    assert.throws(() => defineEntity({ name: 'Order', schemaVersion: 1, schema }), /cached entity 'Order': the name must be lowercase/);
    assert.throws(() => defineEntity({ name: 'or:der', schemaVersion: 1, schema }), /the name must be lowercase/);
    assert.throws(() => defineEntity({ name: 'order', schemaVersion: 0, schema }), /schema versions must be integers >= 1, got 0/);
    assert.throws(() => defineEntity({ name: 'order', schemaVersion: 2, olderSchemaVersions: [2], schema }), /must not repeat the current schemaVersion 2/);
    assert.throws(() => defineEntity({ name: 'order', schemaVersion: 1, schema, route: 'Orders/x' }), /route 'Orders\/x' must be lowercase/);
  });

  it('an invalidation covers the current and the older schema versions still read, and the next one', () => {
    // The next version too: a rolled-back schema bump leaves entries nothing else would invalidate.
    assert.deepEqual(invalidatedSchemaVersions(order), [1, 2]);
    assert.deepEqual(invalidatedSchemaVersions({ ...order, schemaVersion: 3, olderSchemaVersions: [2] }), [3, 2, 4]);
  });

  it('projects an item through the schema: undeclared fields (pk) dropped, a refused item malformed with every problem', () => {
    assert.deepEqual(projectItem(order, { pk: 'order#o-1', orderId: 'o-1', total: 5, version: 2, internal: true }), { orderId: 'o-1', total: 5, version: 2 });
    assert.throws(() => projectItem(order, { pk: 'order#o-1', orderId: 'o-1', version: 1.5 }), (error: unknown) =>
      error instanceof MalformedItemError && /order item order#o-1 is malformed: total: .*; version: /.test(error.message));
    const loose = defineEntity({ name: 'note', schemaVersion: 1, schema: z.object({ version: z.unknown() }) as never });
    assert.throws(() => projectItem(loose, { version: 'x' }), /version must be an integer >= 0, got "x"/, 'the framework insists on the version whatever the schema says');
  });

  it('a payload is served only when it parses and carries the entry\'s version', () => {
    const value = { orderId: 'o-1', total: 5, version: 2 };
    assert.deepEqual(decodeValue(order, encodeValue(value), '2'), value);
    assert.equal(decodeValue(order, encodeValue(value), '3'), undefined);
    assert.equal(decodeValue(order, '{"id":"o-1"}', '2'), undefined);
    assert.equal(decodeValue(order, 'not json', '2'), undefined);
  });
});
