import * as z from 'zod/mini';
import { defineEntity, projectItem } from '@ballast-stack/ballast';

/** What the cache stores and `GET /skus/{id}` returns for a SKU (the item without its `pk`). */
export const CACHED_SKU = z.object({
  skuId: z.string().check(z.minLength(1)),
  available: z.int().check(z.nonnegative()),
  version: z.int().check(z.nonnegative()),
  updatedAt: z.string().check(z.refine((text) => !Number.isNaN(Date.parse(text)), 'must be an ISO-8601 instant')),
});
export type CachedSku = z.infer<typeof CACHED_SKU>;

/** SKUs (`pk = sku#<id>`), cached and served at `GET /skus/{id}`. */
export const skuEntity = defineEntity({ name: 'sku', schemaVersion: 1, schema: CACHED_SKU, route: 'skus' });

/** A SKU item as the cache stores it. @throws MalformedItemError */
export function toCachedSku(item: object): CachedSku {
  return projectItem(skuEntity, item);
}
