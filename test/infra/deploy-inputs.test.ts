import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deployConfig } from '../../infra/config.ts';

const context = (values: Record<string, string>) => (key: string) => values[key];
const good = { partnerApiUrl: 'https://partner.example.net', alarmEmail: 'oncall@example.com' };

describe('deployConfig: what `cdk synth|deploy` must be told', () => {
  it('refuses a synth without -c env rather than deploying dev', () => {
    assert.throws(() => deployConfig(context({})), /No environment given: pass -c env=<local\|dev\|staging\|prod>/);
  });

  it('names each missing flag: dev needs the partner URL, staging and prod also the alarm address', () => {
    assert.throws(() => deployConfig(context({ env: 'dev' })), /env=dev: -c partnerApiUrl=\S+ is required\.$/);
    assert.throws(() => deployConfig(context({ env: 'staging', partnerApiUrl: good.partnerApiUrl })), /env=staging: -c alarmEmail=\S+ is required\.$/);
    assert.throws(() => deployConfig(context({ env: 'prod' })), /env=prod: -c partnerApiUrl=\S+ is required; -c alarmEmail=\S+ is required/);
  });

  it('refuses a partner URL that is not https and an alarm address that is not one', () => {
    assert.throws(() => deployConfig(context({ env: 'prod', partnerApiUrl: 'http://partner', alarmEmail: good.alarmEmail })), /partnerApiUrl must be an https:\/\/ URL/);
    assert.throws(() => deployConfig(context({ env: 'prod', partnerApiUrl: good.partnerApiUrl, alarmEmail: 'oncall' })), /alarmEmail must be an email address/);
  });

  it('takes what it is given; local needs nothing', () => {
    const prod = deployConfig(context({ env: 'prod', ...good }));
    assert.equal(prod.partnerApiUrl, good.partnerApiUrl);
    assert.equal(prod.alarms.email, good.alarmEmail);
    assert.equal(deployConfig(context({ env: 'local' })).name, 'local');
    assert.equal(deployConfig(context({ env: 'dev', partnerApiUrl: good.partnerApiUrl })).alarms.email, undefined);
  });
});
