import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACCOUNT_ID_RULE, CACHE_SCHEMA_VERSION, InvalidAccountIdError, accountCacheKeys, accountIdOfKey, accountValueKeyPattern, isCacheableAccountId,
} from '../../shared/cache/index.ts';

/** Cluster hash slot tag: the substring between the first `{` and the next `}`. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  return key.slice(open + 1, key.indexOf('}', open));
}

describe('cache keys', () => {
  it('carry the entity, a hash tag with the id and the schema version; the tombstone shares the tag', () => {
    const keys = accountCacheKeys('acc-42');
    assert.deepEqual(keys, { value: `account:{acc-42}:v${CACHE_SCHEMA_VERSION}`, tombstone: `account:{acc-42}:v${CACHE_SCHEMA_VERSION}:tomb` });
    assert.equal(hashTag(keys.value), 'acc-42');
    assert.equal(hashTag(keys.tombstone), 'acc-42');
  });

  it('differ by schema version, within the same slot', () => {
    const v1 = accountCacheKeys('acc-42', 1);
    const v2 = accountCacheKeys('acc-42', 2);
    assert.notEqual(v1.value, v2.value);
    assert.equal(v2.value, 'account:{acc-42}:v2');
    assert.equal(hashTag(v1.value), hashTag(v2.value));
  });

  it('refuse ids that could break the hash tag, the separator or a SCAN pattern (fail closed)', () => {
    for (const id of ['', 'a{b', 'a}b', 'a:b', 'a*', 'a?', 'a[1]', ' acc', '-acc', 'x'.repeat(129), 'acc/1']) {
      assert.equal(isCacheableAccountId(id), false, id);
      assert.throws(() => accountCacheKeys(id), (error: unknown) => error instanceof InvalidAccountIdError && error.message.includes(ACCOUNT_ID_RULE), id);
    }
    for (const id of ['a', 'acc-42', 'ACC_1.x', '9'.repeat(128)]) assert.equal(isCacheableAccountId(id), true, id);
  });

  it('refuse schema versions that are not positive integers', () => {
    assert.throws(() => accountCacheKeys('acc-1', 0), RangeError);
    assert.throws(() => accountCacheKeys('acc-1', 1.5), RangeError);
  });

  it('the SCAN pattern matches value keys of its version only, and ids round-trip', () => {
    assert.equal(accountValueKeyPattern(3), 'account:{*}:v3');
    assert.equal(accountIdOfKey('account:{acc-42}:v3', 3), 'acc-42');
    assert.equal(accountIdOfKey('account:{acc-42}:v3:tomb', 3), undefined);
    assert.equal(accountIdOfKey('account:{acc-42}:v2', 3), undefined);
    assert.equal(accountIdOfKey('session:{acc-42}:v3', 3), undefined);
  });
});
