/**
 * `npm run build` (and `npm pack`'s prepack): the package as installed — ESM JavaScript with
 * declarations under dist/ (tsc, tsconfig.build.json), plus the files the code reads at run time
 * (the console's page, the bundling shims).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
for (const dir of ['local/console/page', 'infra/constructs/bundling']) {
  cpSync(join(root, dir), join(dist, dir), { recursive: true, filter: (path) => !path.endsWith('.ts') });
}
process.stdout.write(`built ${dist}\n`);
