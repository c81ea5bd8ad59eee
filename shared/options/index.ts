/**
 * `{ ...defaults, ...options }`, except that an option explicitly set to `undefined` keeps its
 * default. Callers often forward optional settings (`nowMs: deps.nowMs`), and a plain spread would
 * let those undefineds erase the defaults.
 */
export function withDefaults<D extends object, O extends object>(defaults: D, options: O): D & O {
  const merged: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined) merged[key] = value;
  }
  return merged as D & O;
}
