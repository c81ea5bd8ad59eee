import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
import { LAZY_BUILTIN_ALIASES } from './constructs/bundling/lazy-builtins.ts';
import { FROM_SOURCES, frameworkModule } from './constructs/function-entry.ts';

/** From its sources, ballast's package name means its source files: hashed as files, not as a locked package. */
const OWN_SOURCES: Readonly<Record<string, string>> = FROM_SOURCES
  ? { '@ballast-stack/ballast/producer': frameworkModule('shared/producer/index'), '@ballast-stack/ballast': frameworkModule('shared/index') }
  : {};

interface LockPackage {
  readonly version?: string;
  readonly integrity?: string;
  readonly dependencies?: Record<string, string>;
}

/**
 * The version stamped on one function's logs, metrics and DLQ messages (`WORKER_VERSION`): the
 * project's package version plus a hash of exactly what gets bundled into it — the files its entry
 * imports, directly or not, the locked versions of the packages those files import, with their
 * own dependencies, and the modules bundled in place of built-ins (`aliases`). A change anywhere
 * else (the CLI, the infra, another function, a dev dependency) leaves the version alone, so it
 * publishes no new Lambda version, starts no canary and opens no new metric series; two
 * deployments of different bundled code never share a version.
 *
 * @param entry - the function's entry file, absolute or relative to `root`
 * @param root - the project (with `package.json` and `package-lock.json`)
 * @param aliases - built-ins and the files bundled in their place. @default LAZY_BUILTIN_ALIASES, as `BallastFunction` bundles
 * @example codeVersion(stack.worker.entry, projectRoot); // '0.1.0+3f9a1c2e'
 */
export function codeVersion(entry: string, root: string, aliases: Readonly<Record<string, string>> = LAZY_BUILTIN_ALIASES): string {
  const { metafile } = buildSync({
    entryPoints: [resolve(root, entry)],
    absWorkingDir: root,
    alias: OWN_SOURCES,
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    // Packages are hashed by their locked versions below, not by reading node_modules.
    packages: 'external',
    logLevel: 'silent',
  });
  const hash = createHash('sha256');
  const imported = new Set<string>();
  for (const file of Object.keys(metafile.inputs).sort()) {
    hash.update(file).update('\0').update(readFileSync(resolve(root, file))).update('\0');
    for (const { path, external } of metafile.inputs[file]?.imports ?? []) {
      if (external && !path.startsWith('node:')) imported.add(packageName(path));
    }
  }
  // The bundle takes these in place of the built-ins its code imports: part of what it runs.
  for (const name of Object.keys(aliases).sort()) {
    hash.update(name).update('=').update(readFileSync(aliases[name] as string)).update('\0');
  }
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockPackage> };
  for (const name of lockedClosure(imported, lock.packages)) {
    const locked = lock.packages[`node_modules/${name}`];
    hash.update(name).update('@').update(locked?.version ?? 'unlocked').update(locked?.integrity ?? '').update('\0');
  }
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  return `${version}+${hash.digest('hex').slice(0, 8)}`;
}

/** `@scope/name/sub/path` → `@scope/name`; `name/sub` → `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** The packages and every dependency they pull in, as the lock file resolves them (hoisted), sorted. */
function lockedClosure(names: Iterable<string>, packages: Record<string, LockPackage>): string[] {
  const seen = new Set<string>();
  const pending = [...names];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (seen.has(name)) continue;
    seen.add(name);
    pending.push(...Object.keys(packages[`node_modules/${name}`]?.dependencies ?? {}));
  }
  return [...seen].sort();
}
