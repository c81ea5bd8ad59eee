/**
 * Polls `condition` every `intervalMs` until it holds; throws after `timeoutMs`, naming `what`.
 * Every wait in the tests goes through here, so every wait is bounded.
 */
export async function waitFor(
  what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000, intervalMs = 25,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
