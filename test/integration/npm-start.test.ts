import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { exitOf, runNode, survivors, waitForOutput } from '../helpers/processes.ts';

const cli = fileURLToPath(new URL('../../cli/bin/ballast.ts', import.meta.url));

describe('npm start (ballast dev --demo on this repository\'s app)', () => {
  it('prints the engines within 30 s, runs the demo to "demo complete" with every job accounted for, exits 0 on SIGINT leaving nothing', async () => {
    // A smaller demo than the default (3,000 jobs over a minute): bench/ measures the full one.
    const app = runNode(cli, ['dev', '--demo', '--jobs', '300', '--duration', '8']);
    try {
      const early = await waitForOutput(app, /redis\s+redis:\/\/\S+/, 30_000);
      const endpoints = [...early.matchAll(/^\s+(dynamodb|sqs|redis)\s+(\S+)/gm)].map((match) => match[1]);
      assert.deepEqual(endpoints, ['dynamodb', 'sqs', 'redis']);
      const pids = [...early.matchAll(/pid (\d+)/g)].map((match) => Number(match[1]));
      assert.equal(pids.length, 2, 'java and redis-server pids are printed');

      const output = await waitForOutput(app, /Press Ctrl-C to stop/, 170_000);
      assert.match(output, /stack ballast-local is running locally/);
      assert.match(output, /url\s+http:\/\/127\.0\.0\.1:\d+\//);
      const complete = /demo complete: (\d+) of (\d+) jobs accounted for/.exec(output);
      assert.ok(complete, 'demo complete line');
      assert.equal(complete[1], complete[2], 'every demo job is processed, suppressed as a duplicate, or dead-lettered with its reason');
      assert.equal(complete[2], '300');
      // AND the functions reached DynamoDB through the emulation of the service's transaction conflicts
      assert.match(output, /iam\s+enforced: each function's DynamoDB and SQS calls/);
      assert.doesNotMatch(output, /local IAM: refused: /, 'the demo stack does nothing its grants do not allow');
      assert.match(output, /conflicts\s+http:\/\/127\.0\.0\.1:\d+\s+\(the functions' way to DynamoDB/);
      assert.match(output, /transaction conflicts the service would have raised: \d+/);
      assert.match(output, /DLQ\s+\d+ \(.*invalid-envelope.*incompatible-version|DLQ\s+\d+ \(.*incompatible-version.*invalid-envelope/);
      // AND the console it printed serves the stack's dashboard
      const consoleUrl = /console\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      assert.ok(consoleUrl, 'the console URL is printed');
      const dashboards = await (await fetch(`${consoleUrl}/api/dashboards`)).json() as { dashboards: { name: string; body?: unknown }[] };
      assert.deepEqual(dashboards.dashboards.map((d) => [d.name, d.body !== undefined]), [['ballast-local', true]]);

      app.kill('SIGINT');
      assert.equal(await exitOf(app, 30_000), 0);
      assert.deepEqual(await survivors(pids, 5_000), []);
    } finally {
      if (app.exitCode === null) app.kill('SIGKILL');
    }
  });
});
