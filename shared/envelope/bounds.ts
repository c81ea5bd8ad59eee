/**
 * DynamoDB refuses attributes nested deeper than 32 levels; a payload deeper than that can never
 * be committed, and an unbounded one would overflow every recursive walk (hashing, marshalling,
 * logging) on its way there.
 */
export const MAX_PAYLOAD_DEPTH = 32;

/**
 * The first reason `value` (a JSON.parse result) cannot be a job's data, or undefined: nesting
 * deeper than {@link MAX_PAYLOAD_DEPTH} below the payload, or a string or key that is not
 * well-formed Unicode (a lone surrogate, which DynamoDB and most external APIs reject or mangle).
 * Iterative, so a hostile body cannot exhaust the stack of the walk meant to refuse it.
 * `rootDepth` places `value` relative to the level that counts (-1 for an envelope around its payload).
 */
export function jsonBoundsViolation(value: unknown, maxDepth = MAX_PAYLOAD_DEPTH, rootDepth = 0): string | undefined {
  const pending: [unknown, number, string][] = [[value, rootDepth, '(root)']];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, depth, path] = next;
    if (typeof node === 'string') {
      if (!node.isWellFormed()) return `${path}: not well-formed Unicode (lone surrogate)`;
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    if (depth >= maxDepth) return `${path}: nests deeper than ${maxDepth} levels`;
    for (const [key, child] of Object.entries(node)) {
      if (!key.isWellFormed()) return `${path}: a key is not well-formed Unicode (lone surrogate)`;
      pending.push([child, depth + 1, depth < 3 ? `${path === '(root)' ? '' : `${path}.`}${key}` : path]);
    }
  }
  return undefined;
}
