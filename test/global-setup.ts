/**
 * Runs once around the whole `npm test` run (node --test-global-setup).
 *
 * Every engine started by any test inherits an owner mark naming this run; after the last test,
 * any process still carrying the mark is a leak: it is killed and the run fails, naming it.
 */
import { ENGINE_OWNER_ENV } from '../local/engines/supervised-process.ts';
import { processesMarkedBy } from '../local/engines/leftovers.ts';

const owner = `ballast-test-${process.pid}-${Date.now()}`;

export function globalSetup(): void {
  process.env[ENGINE_OWNER_ENV] = owner;
}

let checked = false;

export async function globalTeardown(): Promise<void> {
  // Node 24's runner may call the teardown twice when it throws; report once.
  if (checked) return;
  checked = true;
  // Give processes killed at the very end of the last test file a moment to finish exiting.
  let leftovers = processesMarkedBy(owner);
  for (let attempt = 0; attempt < 20 && leftovers.length > 0; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    leftovers = processesMarkedBy(owner);
  }
  if (leftovers.length === 0) {
    process.stdout.write('global teardown: no engine process left running\n');
    return;
  }
  for (const leftover of leftovers) {
    try {
      process.kill(leftover.pid, 'SIGKILL');
    } catch {
      // Gone in the meantime.
    }
  }
  const message = `engine processes left running after the tests (now killed):\n${leftovers.map((p) => `  ${p.pid} ${p.command}`).join('\n')}`;
  process.stderr.write(`global teardown: ${message}\n`);
  process.exitCode = 1;
  throw new Error(message);
}
