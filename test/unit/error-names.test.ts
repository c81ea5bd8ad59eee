/**
 * Errors keep their names in a minified bundle, as the stack deploys the functions: `errorName` in
 * a log line and the `name` of a logged error are what an on-call engineer filters by, and a
 * minifier renames classes (`FencedError` became `uo` in the worker's logs).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { FatalError, LockBusyError } from '../../shared/errors/index.ts';
import { InvalidJobError, ProducerError } from '../../shared/producer/errors.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Every module of `shared/` that a function's bundle carries errors from. */
const ERROR_MODULES = ['shared/errors/index.ts', 'shared/cache/errors.ts', 'shared/streams/errors.ts', 'shared/producer/errors.ts'];

describe('error names in a minified bundle', () => {
  it('every exported error class is named as it is exported, after esbuild minifies it as the stack builds the functions', async () => {
    const entry = `${ERROR_MODULES.map((path, i) => `import * as m${i} from './${path}';`).join('\n')}
const modules = { ${ERROR_MODULES.map((_, i) => `...m${i}`).join(', ')} };
export const names = Object.entries(modules)
  // (BallastError is abstract: never raised as itself)
  .filter(([exported, value]) => typeof value === 'function' && value.prototype instanceof Error && exported !== 'BallastError')
  .map(([exported, ErrorClass]) => [exported, new ErrorClass('a-reason', 'a message').name]);`;
    const out = await build({
      stdin: { contents: entry, resolveDir: ROOT, loader: 'ts' }, bundle: true, platform: 'node', format: 'esm', target: 'node24', minify: true, write: false,
    });
    const dir = mkdtempSync(join(tmpdir(), 'ballast-error-names-'));
    try {
      const file = join(dir, 'errors.mjs');
      writeFileSync(file, out.outputFiles[0]?.text ?? '');
      const { names } = await import(pathToFileURL(file).href) as { names: [string, string][] };
      assert.ok(names.length >= 15, `found ${names.length} error classes`);
      assert.deepEqual(names.filter(([exported, name]) => exported !== name), [], 'exported name → name in the bundle');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a user's subclass without a name of its own is named by its class, not by the framework's class it extends", () => {
    class OrderLockedError extends FatalError {}
    class SlowLockError extends LockBusyError {}
    class QuotaError extends ProducerError {}
    assert.deepEqual([new OrderLockedError('order-locked', 'locked').name, new SlowLockError('slow').name, new QuotaError('over quota').name],
      ['OrderLockedError', 'SlowLockError', 'QuotaError']);
    assert.deepEqual([new LockBusyError('busy').name, new InvalidJobError('bad').name], ['LockBusyError', 'InvalidJobError']);
  });
});
