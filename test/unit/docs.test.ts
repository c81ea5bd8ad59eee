/**
 * The README is a landing page and the docs show code that compiles: the README stays within 300
 * lines and links every page of docs/; every TypeScript or JavaScript block in them is a file of
 * this repository (named by the `<!-- snippet: <path> -->` line above it, type-checked by
 * `npm run typecheck`), shown as it is; every relative link leads to a file.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const read = (path: string) => readFileSync(join(root, path), 'utf8');

describe('docs', () => {
  it('the README is at most 300 lines and links every page of docs/', () => {
    const readme = read('README.md');
    assert.ok(readme.split('\n').length <= 300, `README.md has ${readme.split('\n').length} lines`);
    for (const page of pages.filter((path) => path !== 'README.md')) assert.ok(readme.includes(`](${page}`), `README.md does not link ${page}`);
  });

  it('every code block in TypeScript or JavaScript is a snippet of a file, shown as the file is', () => {
    const problems: string[] = [];
    for (const page of pages) {
      const lines = read(page).split('\n');
      for (let i = 0; i < lines.length; i += 1) {
        if (!/^```(ts|typescript|js|javascript|mjs)\s*$/.test(lines[i] ?? '')) continue;
        const end = lines.indexOf('```', i + 1);
        const marker = /^<!-- snippet: (\S+) -->$/.exec(lines[i - 1] ?? '');
        if (!marker) problems.push(`${page}:${i + 1}: a code block without a <!-- snippet: <file> --> line above it`);
        else if (!existsSync(join(root, marker[1] as string))) problems.push(`${page}:${i + 1}: ${marker[1]} does not exist`);
        else if (`${lines.slice(i + 1, end).join('\n')}\n` !== read(marker[1] as string)) problems.push(`${page}:${i + 1}: differs from ${marker[1]}`);
        i = end;
      }
    }
    assert.deepEqual(problems, [], 'copy the file into the block (or the block into the file, and type-check it)');
  });

  it('every relative link leads to a file', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target] of read(page).matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target as string)) continue;
        const path = join(root, dirname(page), target as string);
        if (!existsSync(path)) broken.push(`${page} → ${relative(root, path)}`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
