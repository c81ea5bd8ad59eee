import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));

/**
 * The worker version stamped on logs, metrics and DLQ messages: the package version plus a hash of
 * the code that gets bundled (`functions/`, `shared/`, the lock file). Two deployments of different
 * code never share a version, so during a canary the dashboards, the duplicate-rate alarm and
 * `ballast doctor` can tell the new version from the old one even without a version bump.
 * @example '0.1.0+3f9a1c2e'
 */
export function codeVersion(): string {
  const hash = createHash('sha256');
  const files = [...walk(join(root, 'functions')), ...walk(join(root, 'shared')), join(root, 'package-lock.json')].sort();
  for (const file of files) hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  return `${version}+${hash.digest('hex').slice(0, 8)}`;
}

function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* walk(path);
    else if (entry.endsWith('.ts')) yield path;
  }
}
