import { fileURLToPath } from 'node:url';

const shim = (file: string) => fileURLToPath(new URL(`./${file}`, import.meta.url));

/**
 * esbuild aliases that keep `node:http` and `node:https` lazy in an ESM bundle.
 *
 * An ES module import of a built-in makes Node build its ESM facade, which reads every export of
 * the module; `node:http`'s exports include lazy getters (`WebSocket`, `MessageEvent`, …) that load
 * undici, fetch's engine, about 20 ms of every cold start that nothing in a function uses (the
 * SDK's Node handler speaks `node:http` itself). The AWS SDK's ESM builds import both modules, so
 * every bundle paid it. These aliases bundle a one-line CommonJS module in their place that takes
 * the module with `process.getBuiltinModule`, as `require()` would, leaving the getters unread.
 * Measured by `npm run bench:throughput` (cold import of each bundle, built with these options).
 * The paths are absolute on this machine: bundling is local (`forceDockerBundling: false`), never
 * in a container where they would not exist.
 */
export const LAZY_BUILTIN_ALIASES: Readonly<Record<string, string>> = {
  http: shim('node-http.cjs'),
  'node:http': shim('node-http.cjs'),
  https: shim('node-https.cjs'),
  'node:https': shim('node-https.cjs'),
};
