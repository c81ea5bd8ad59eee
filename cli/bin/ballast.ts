#!/usr/bin/env node
/**
 * `ballast` — the operator CLI (`npm run ballast -- <command>`, or `npx ballast` where installed).
 * See `ballast --help` for commands and exit codes.
 */
// Library code logs through Powertools; on a terminal only the CLI's own output should show.
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const { runCli } = await import('../program.ts');
process.exitCode = await runCli(process.argv.slice(2));
