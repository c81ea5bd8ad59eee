/**
 * `npm run bench:chaos`: exactly-once under injected faults. For each fault level, a fresh local
 * cloud (worker timeout 2 s, so crashed batches return after 12 s) takes 1,000 credits over 50
 * accounts while invocations crash after committing and time out; then every balance is compared
 * with the ledger. Writes bench/results/chaos.json and prints a Markdown table for the README.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startEngines } from '../local/engines/index.ts';
import { startLocalCloud } from '../local/cloud/index.ts';
import { balanceMismatches, drainQueue, sendCredits } from '../local/demo/ledger.ts';
import { queueCounts } from '../shared/queues/index.ts';
import { startPartnerApi } from '../local/partner-api/server.ts';

const LEVELS = [
  { crashAfterWorkRate: 0, delayPastTimeoutRate: 0 },
  { crashAfterWorkRate: 0.05, delayPastTimeoutRate: 0.02 },
  { crashAfterWorkRate: 0.15, delayPastTimeoutRate: 0.05 },
  { crashAfterWorkRate: 0.3, delayPastTimeoutRate: 0.1 },
];
const CREDITS = 1_000;
const app = fileURLToPath(new URL('../test/fixtures/app-fast-timeouts.ts', import.meta.url));

const rows = [];
for (const faults of LEVELS) {
  const engines = await startEngines();
  const partner = await startPartnerApi();
  try {
    const cloud = await startLocalCloud({ engines, appFile: app, context: { partnerApiUrl: partner.url }, faults: { ...faults } });
    const client = { region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS };
    const sqs = new SQSClient({ ...client, endpoint: engines.sqs.endpoint });
    const documents = DynamoDBDocumentClient.from(new DynamoDBClient({ ...client, endpoint: engines.dynamodb.endpoint }));
    const { outputs } = cloud.resources;
    const expected = await sendCredits({ sqs, queueUrl: outputs.JobsQueueUrl as string, count: CREDITS, accounts: 50, prefix: 'acc-bench' });
    const drainMs = await drainQueue(sqs, outputs.JobsQueueUrl as string, 600_000);
    const mismatches = await balanceMismatches(documents, outputs.StateTableName as string, expected);
    const row = {
      crashAfterWorkPercent: faults.crashAfterWorkRate * 100,
      timeoutPercent: faults.delayPastTimeoutRate * 100,
      credits: CREDITS,
      drainSeconds: Number((drainMs / 1000).toFixed(1)),
      duplicatesSuppressed: cloud.metrics.total('DuplicatesSuppressed'),
      retries: cloud.metrics.total('JobsRetried'),
      deadLettered: (await queueCounts(sqs, outputs.JobsDeadLetterQueueUrl as string)).visible,
      balanceMismatches: mismatches.length,
    };
    rows.push(row);
    process.stderr.write(`${JSON.stringify(row)}\n`);
    await cloud.stop({ graceMs: 3_000 });
  } finally {
    await partner.stop();
    await engines.stop();
  }
}
writeFileSync(new URL('./results/chaos.json', import.meta.url), `${JSON.stringify({ date: new Date().toISOString(), rows }, null, 2)}\n`);
console.log('| crash after commit | timeout | credits | drained in | duplicates suppressed | retries | dead-lettered | balance mismatches |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.crashAfterWorkPercent} % | ${r.timeoutPercent} % | ${r.credits} | ${r.drainSeconds} s | ${r.duplicatesSuppressed} | ${r.retries} | ${r.deadLettered} | **${r.balanceMismatches}** |`);
}
