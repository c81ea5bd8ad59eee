/**
 * One template snapshot per environment, to review every change to what gets deployed. Bundling
 * is skipped, and the values that depend on it (asset hashes, the hash in a Lambda version's
 * logical id, the code hash in a function's `WORKER_VERSION`) are replaced by placeholders, so an
 * edit of a function's code changes no snapshot (test/infra/stack.test.ts covers what a code hash follows). Snapshots are written when missing or with
 * `UPDATE_SNAPSHOTS=1 npx node --test test/infra/snapshot.test.ts`, and compared otherwise.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ENVIRONMENT_NAMES } from '../../infra/config.ts';
import { synthStack } from '../helpers/infra.ts';

const SNAPSHOT_DIR = fileURLToPath(new URL('./__snapshots__/', import.meta.url));

/** The template as stable JSON: asset hashes, version-hash suffixes and code hashes become placeholders. */
function normalized(template: unknown): string {
  return `${JSON.stringify(template, null, 2)
    .replace(/\b[0-9a-f]{64}\b/g, '<asset-hash>')
    .replace(/(CurrentVersion[0-9A-F]{8})[0-9a-f]{32}\b/g, '$1<version-hash>')
    .replace(/("WORKER_VERSION": "\d+\.\d+\.\d+\+)[0-9a-f]{8}"/g, '$1<code-hash>"')}\n`;
}

describe('template snapshots', () => {
  for (const env of ENVIRONMENT_NAMES) {
    it(`${env} matches __snapshots__/ballast-${env}.template.json`, () => {
      // GIVEN/WHEN the environment's stack is synthesized
      const actual = normalized(synthStack(env).template.toJSON());
      const file = `${SNAPSHOT_DIR}ballast-${env}.template.json`;
      if (process.env.UPDATE_SNAPSHOTS === '1' || !existsSync(file)) {
        mkdirSync(SNAPSHOT_DIR, { recursive: true });
        writeFileSync(file, actual);
        return;
      }
      // THEN it is the reviewed template; on an intended change, rerun with UPDATE_SNAPSHOTS=1 and review the diff
      assert.equal(actual, readFileSync(file, 'utf8'), `ballast-${env} changed: rerun with UPDATE_SNAPSHOTS=1 if intended`);
    });
  }

  it('leaves no asset hash or version hash in a snapshot', () => {
    // GIVEN/WHEN
    const text = normalized(synthStack('dev').template.toJSON());
    // THEN
    assert.doesNotMatch(text, /[0-9a-f]{64}/);
    assert.doesNotMatch(text, /CurrentVersion[0-9A-F]{8}[0-9a-f]{32}/);
    assert.doesNotMatch(text, /"WORKER_VERSION": "[^"]*\+[0-9a-f]{8}"/);
    assert.match(text, /"WORKER_VERSION": "\d+\.\d+\.\d+\+<code-hash>"/);
    assert.match(text, /"S3Key": "<asset-hash>\.zip"/);
  });
});
