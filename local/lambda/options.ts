/**
 * Options with explicit `undefined`s dropped, so that spreading them over a `defaults` constant
 * keeps the defaults: `{ ...defaults, ...{ batchSize: undefined } }` would otherwise unset one.
 *
 * @example
 * import { withoutUndefined } from '../local/lambda/options.ts';
 * const config = { ...defaults, ...withoutUndefined(options) };
 */
export function withoutUndefined<T extends object>(options: T): T {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as T;
}
