import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { marshall, NumberValueImpl, type marshallOptions } from '@aws-sdk/util-dynamodb';
import { marshallMap } from '../../shared/idempotency/transact.ts';

/** What `fn` returns, or the message it throws. */
const outcome = (fn: () => unknown) => {
  try {
    return { value: fn() };
  } catch (error) {
    return { error: (error as Error).message };
  }
};

describe("the store's marshalling of transaction items", () => {
  const values: Record<string, unknown> = {
    text: 'idem#key', empty: '', unicode: 'zażółć ✓', zero: 0, negativeZero: -0, integer: 1_796_240_891_594, negative: -42, float: 0.1 + 0.2,
    maxSafe: Number.MAX_SAFE_INTEGER, minSafe: Number.MIN_SAFE_INTEGER, yes: true, no: false, nothing: null,
    map: { accountId: 'a', credited: 1, nested: { deep: [1, 'two', null] } }, list: [1, 'x', { y: 2 }], set: new Set(['a', 'b']),
    numbers: new Set([1, 2]), binary: new Uint8Array([1, 2, 3]), bigint: 12_345_678_901_234_567_890n, exact: new NumberValueImpl('1.2345678901234567890'),
    fn: () => 1,
  };
  const options: marshallOptions[] = [
    {}, { removeUndefinedValues: true }, { convertEmptyValues: true }, { removeUndefinedValues: true, convertTopLevelContainer: false },
    { convertClassInstanceToMap: true, removeUndefinedValues: true },
  ];

  it('writes every value exactly as util-dynamodb marshall does, under every option', () => {
    for (const option of options) {
      for (const [name, value] of Object.entries(values)) {
        assert.deepEqual(outcome(() => marshallMap({ [name]: value }, option)), outcome(() => marshall({ [name]: value }, option)), `${name} ${JSON.stringify(option)}`);
      }
      assert.deepEqual(marshallMap(values, option), marshall(values, option), JSON.stringify(option));
    }
  });

  it('refuses what marshall refuses, with the same message', () => {
    const refused: Record<string, unknown> = { nan: Number.NaN, infinite: Number.POSITIVE_INFINITY, unsafe: 2 ** 60, undefinedKept: undefined, date: new Date(0) };
    for (const option of [{}, { removeUndefinedValues: true }, { allowImpreciseNumbers: true }] as marshallOptions[]) {
      for (const [name, value] of Object.entries(refused)) {
        assert.deepEqual(outcome(() => marshallMap({ [name]: value }, option)), outcome(() => marshall({ [name]: value }, option)), `${name} ${JSON.stringify(option)}`);
      }
    }
  });

  it('hands a map that is not a plain object to marshall whole', () => {
    const map = new Map<string, unknown>([['pk', 'a'], ['n', 1]]);
    assert.deepEqual(outcome(() => marshallMap(map as unknown as Record<string, unknown>, {})), outcome(() => marshall(map, {})));
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { pk: 'a', n: 2 });
    assert.deepEqual(marshallMap(bare, {}), marshall(bare, {}));
  });
});
