import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's chromium, which `.ci/run` installs (and requires, with BALLAST_REQUIRE_BROWSER=1). On a
 * developer machine without it the browser tests are skipped with the command that installs it.
 */
export const CHROMIUM = '/usr/bin/chromium';

/** The `skip` of a browser test's `describe`: the reason, or false when the browser tests run. */
export const browserMissing = !existsSync(CHROMIUM) && process.env.BALLAST_REQUIRE_BROWSER !== '1'
  ? `${CHROMIUM} is missing: apt-get install -y chromium to run the console's browser tests` : false;

/** Launches headless chromium before the suite's tests and closes it after; call inside `describe`. */
export function useBrowser(): () => Browser {
  let browser: Browser | undefined;
  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  });
  after(async () => browser?.close());
  return () => {
    if (!browser) throw new Error('the browser is launched in before(): use it inside a test');
    return browser;
  };
}
