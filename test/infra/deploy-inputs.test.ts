import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deployConfig } from '../../infra/config.ts';

/** A registry's two settings, as the example workloads declare them. */
const SETTINGS = ['PARTNER_API_URL', 'CARRIER_API_URL'];

const context = (values: Record<string, string>) => (key: string) => values[key];
const urls = { PARTNER_API_URL: 'https://partner.example.net', CARRIER_API_URL: 'https://carrier.example.net' };
const good = { ...urls, alarmEmail: 'oncall@example.com' };

describe('deployConfig: what `cdk synth|deploy` must be told', () => {
  it('refuses a synth without -c env rather than deploying dev', () => {
    assert.throws(() => deployConfig(context({}), SETTINGS), /No environment given: pass -c env=<local\|dev\|staging\|prod>/);
  });

  it('names each missing flag: dev needs the partner URL, staging and prod also the alarm address', () => {
    assert.throws(() => deployConfig(context({ env: 'dev' }), SETTINGS), /env=dev: -c PARTNER_API_URL=\S+ is required; -c CARRIER_API_URL=\S+ is required\.$/);
    assert.throws(() => deployConfig(context({ env: 'staging', ...urls }), SETTINGS), /env=staging: -c alarmEmail=\S+ is required\.$/);
    assert.throws(() => deployConfig(context({ env: 'prod' }), SETTINGS), /env=prod: -c PARTNER_API_URL=\S+ is required; -c CARRIER_API_URL=\S+ is required; -c alarmEmail=\S+ is required/);
  });

  it('refuses a partner URL that is not https and an alarm address that is not one', () => {
    assert.throws(() => deployConfig(context({ env: 'prod', ...good, PARTNER_API_URL: 'http://partner' }), SETTINGS), /PARTNER_API_URL must be an https:\/\/ URL/);
    assert.throws(() => deployConfig(context({ env: 'prod', ...urls, alarmEmail: 'oncall' }), SETTINGS), /alarmEmail must be an email address/);
  });

  it('requires every registered workload setting by name, https for the *_URL ones only', () => {
    const names = ['CARRIER_API_URL', 'CARRIER_ACCOUNT'];
    assert.throws(() => deployConfig(context({ env: 'dev' }), names), /-c CARRIER_API_URL=https:\/\/\S+ is required; -c CARRIER_ACCOUNT=<value> is required\.$/);
    assert.throws(() => deployConfig(context({ env: 'dev', CARRIER_API_URL: 'ftp://x', CARRIER_ACCOUNT: 'acme' }), names), /-c CARRIER_API_URL must be an https:\/\/ URL, got 'ftp:\/\/x'/);
    assert.deepEqual(deployConfig(context({ env: 'dev', CARRIER_API_URL: 'https://carrier.example.net', CARRIER_ACCOUNT: 'acme', OTHER: 'x' }), names).settings,
      { CARRIER_API_URL: 'https://carrier.example.net', CARRIER_ACCOUNT: 'acme' }, 'only declared settings are taken');
  });

  it('takes what it is given; local needs nothing', () => {
    const prod = deployConfig(context({ env: 'prod', ...good }), SETTINGS);
    assert.equal(prod.settings.PARTNER_API_URL, good.PARTNER_API_URL);
    assert.equal(prod.alarms.email, good.alarmEmail);
    assert.equal(deployConfig(context({ env: 'local' }), SETTINGS).name, 'local');
    assert.equal(deployConfig(context({ env: 'dev', ...urls }), SETTINGS).alarms.email, undefined);
  });

  it('keeps each environment\'s canary minimum without -c canaryMinRecords: none for local and dev, 20 records for staging, 100 for prod', () => {
    const minRecords = (env: string) => deployConfig(context({ env, ...good }), SETTINGS).worker.canary.minRecords;
    assert.equal(minRecords('local'), 0);
    assert.equal(minRecords('dev'), 0);
    assert.equal(minRecords('staging'), 20);
    assert.equal(minRecords('prod'), 100);
  });

  it('overrides the canary minimum with -c canaryMinRecords, and only that', () => {
    // GIVEN/WHEN an idle staging queue promoted on the readiness check alone, and a stricter prod
    const staging = deployConfig(context({ env: 'staging', ...good, canaryMinRecords: '0' }), SETTINGS);
    const prod = deployConfig(context({ env: 'prod', ...good, canaryMinRecords: '250' }), SETTINGS);
    // THEN
    assert.equal(staging.worker.canary.minRecords, 0);
    assert.equal(prod.worker.canary.minRecords, 250);
    // AND the rest of the canary and of the worker stay the environment's
    const { canary: stagingCanary, ...stagingWorker } = staging.worker;
    const { canary: defaultCanary, ...defaultWorker } = deployConfig(context({ env: 'staging', ...good }), SETTINGS).worker;
    assert.deepEqual({ ...stagingCanary, minRecords: undefined }, { ...defaultCanary, minRecords: undefined });
    assert.deepEqual(stagingWorker, defaultWorker);
    // AND a number from cdk.json context works like the flag's text
    assert.equal(deployConfig((key) => ({ env: 'dev', ...urls, canaryMinRecords: 7 } as Record<string, unknown>)[key], SETTINGS).worker.canary.minRecords, 7);
  });

  it('refuses a canary minimum that is not a whole number ≥ 0, with the other problems', () => {
    for (const value of ['-1', '2.5', 'ten', '', ' ']) {
      assert.throws(
        () => deployConfig(context({ env: 'staging', ...good, canaryMinRecords: value }), SETTINGS),
        new RegExp(`^Error: env=staging: -c canaryMinRecords must be a whole number ≥ 0, got '${value.replace('.', '\\.')}'\\.$`),
        `'${value}'`,
      );
    }
    assert.throws(
      () => deployConfig(context({ env: 'prod', ...urls, canaryMinRecords: '-5' }), SETTINGS),
      /env=prod: -c canaryMinRecords must be a whole number ≥ 0, got '-5'; -c alarmEmail=\S+ is required\.$/,
    );
  });
});
