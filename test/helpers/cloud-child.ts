/**
 * A local cloud in its own process on engines another process started (endpoints in
 * BALLAST_TEST_ENGINES), for the SIGTERM test: prints `READY <outputs>` and drains on SIGTERM.
 */
import { startLocalCloud } from '../../local/cloud/index.ts';

const engines = JSON.parse(process.env.BALLAST_TEST_ENGINES ?? '{}');
const context = JSON.parse(process.env.BALLAST_TEST_CONTEXT ?? '{}');
const cloud = await startLocalCloud({ engines, context });
process.once('SIGTERM', () => {
  void cloud.stop({ graceMs: 10_000 }).then(() => process.exit(0));
});
process.stdout.write(`READY ${JSON.stringify(cloud.resources.outputs)}\n`);
setInterval(() => {}, 1 << 30);
