import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, Redis } from 'ioredis';
import { EMPTY_PAYLOAD_SHA256, presignUrl } from '../../shared/aws/index.ts';
import {
  CacheAuthToken, CacheConfigurationError, cacheConfigFromEnv, cacheConnectionOptions, createCacheClient, credentialsFromEnv,
  elastiCacheIamAuthToken, IAM_AUTH_TOKEN_EXPIRES_SECONDS, iamAuthToken,
} from '../../shared/cache/index.ts';
import { workerConfigFromEnv } from '../../functions/worker/config.ts';

/** AWS's documented example credentials (S3 "Authenticating Requests: Using Query Parameters"). */
const EXAMPLE_CREDENTIALS = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

describe('presignUrl: SigV4 in the query string', () => {
  it('reproduces AWS\'s published presigned-URL example (S3, UNSIGNED-PAYLOAD)', () => {
    // GIVEN the example's request, WHEN presigned
    const url = presignUrl({
      method: 'GET', host: 'examplebucket.s3.amazonaws.com', path: '/test.txt', service: 's3', region: 'us-east-1',
      credentials: EXAMPLE_CREDENTIALS, expiresInSeconds: 86_400, now: new Date('2013-05-24T00:00:00Z'), payloadHash: 'UNSIGNED-PAYLOAD',
    });
    // THEN the signature is the documented one, and the query the documented parameters
    assert.equal(url, 'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256'
      + '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z'
      + '&X-Amz-Expires=86400&X-Amz-SignedHeaders=host'
      + '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404');
  });

  it('hashes an empty payload by default, signs the session token, and refuses out-of-range expiries', () => {
    const base = {
      method: 'GET', host: 'examplebucket.s3.amazonaws.com', path: '/test.txt', service: 's3', region: 'us-east-1',
      credentials: EXAMPLE_CREDENTIALS, expiresInSeconds: 86_400, now: new Date('2013-05-24T00:00:00Z'),
    };
    const signature = (url: string) => new URL(url).searchParams.get('X-Amz-Signature');
    assert.equal(EMPTY_PAYLOAD_SHA256, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    assert.notEqual(signature(presignUrl(base)), 'aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404', 'the payload hash is signed');
    assert.equal(signature(presignUrl(base)), signature(presignUrl({ ...base, payloadHash: EMPTY_PAYLOAD_SHA256 })));
    const withToken = new URL(presignUrl({ ...base, credentials: { ...EXAMPLE_CREDENTIALS, sessionToken: 'FQoG/token+=' } }));
    assert.equal(withToken.searchParams.get('X-Amz-Security-Token'), 'FQoG/token+=');
    assert.notEqual(withToken.searchParams.get('X-Amz-Signature'), signature(presignUrl(base)), 'the token is part of the signature');
    assert.throws(() => presignUrl({ ...base, expiresInSeconds: 0 }), /expiresInSeconds must be a whole number in 1–604800, got 0/);
    assert.throws(() => presignUrl({ ...base, expiresInSeconds: 604_801 }), RangeError);
  });
});

describe('ElastiCache IAM auth tokens', () => {
  const request = { cacheName: 'Ballast-Cache', userId: 'Ballast-User', region: 'eu-west-1', credentials: EXAMPLE_CREDENTIALS, now: new Date('2026-01-02T03:04:05Z') };

  it('are the presigned connect request for the cache and user, without its http:// prefix, lowercased, valid 900 s', () => {
    // WHEN
    const token = elastiCacheIamAuthToken(request);
    // THEN
    assert.ok(!token.startsWith('http'), token);
    assert.ok(token.startsWith('ballast-cache/?'), token);
    const query = new URL(`http://${token}`).searchParams;
    assert.deepEqual(
      Object.fromEntries([...query].filter(([name]) => name !== 'X-Amz-Signature')),
      {
        Action: 'connect', ResourceType: 'ServerlessCache', User: 'ballast-user', 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
        'X-Amz-Credential': 'AKIAIOSFODNN7EXAMPLE/20260102/eu-west-1/elasticache/aws4_request', 'X-Amz-Date': '20260102T030405Z',
        'X-Amz-Expires': String(IAM_AUTH_TOKEN_EXPIRES_SECONDS), 'X-Amz-SignedHeaders': 'host',
      },
    );
    assert.equal(IAM_AUTH_TOKEN_EXPIRES_SECONDS, 900);
    assert.match(query.get('X-Amz-Signature') ?? '', /^[0-9a-f]{64}$/);
    assert.equal(token, elastiCacheIamAuthToken({ ...request, cacheName: 'ballast-cache', userId: 'ballast-user' }), 'case does not matter');
  });

  it('carry the session token of temporary credentials', () => {
    const token = elastiCacheIamAuthToken({ ...request, credentials: { ...EXAMPLE_CREDENTIALS, sessionToken: 'IQoJb3JpZ2lu/session' } });
    assert.equal(new URL(`http://${token}`).searchParams.get('X-Amz-Security-Token'), 'IQoJb3JpZ2lu/session');
    assert.equal(new URL(`http://${elastiCacheIamAuthToken(request)}`).searchParams.get('X-Amz-Security-Token'), null);
  });

  it('are reused until the refresh age, then signed again (injected clock)', () => {
    // GIVEN a token source on a clock we move
    let nowMs = Date.parse('2026-01-02T03:04:05Z');
    const signedAt: number[] = [];
    const source = iamAuthToken({
      cacheName: 'ballast-cache', userId: 'ballast-user', region: 'eu-west-1', credentials: () => EXAMPLE_CREDENTIALS, nowMs: () => nowMs,
    });
    const counting = new CacheAuthToken({ sign: (atMs) => (signedAt.push(atMs), `token ${signedAt.length}`), nowMs: () => nowMs });
    // WHEN / THEN: within 10 minutes, the same token
    const first = source.token();
    assert.equal(new URL(`http://${first}`).searchParams.get('X-Amz-Date'), '20260102T030405Z');
    assert.equal(counting.token(), 'token 1');
    nowMs += 599_999;
    assert.equal(source.token(), first);
    assert.equal(counting.token(), 'token 1');
    // at 10 minutes, a new one, signed now
    nowMs += 1;
    const second = source.token();
    assert.notEqual(second, first);
    assert.equal(new URL(`http://${second}`).searchParams.get('X-Amz-Date'), '20260102T031405Z');
    assert.equal(counting.token(), 'token 2');
    // a clock that went backwards re-signs too (the token's date would lie otherwise)
    nowMs -= 60_000;
    assert.equal(counting.token(), 'token 3');
    assert.deepEqual(signedAt.map((atMs) => atMs - signedAt[0]!), [0, 600_000, 540_000]);
  });

  it('refuse a refresh age at or beyond the token\'s 15-minute validity', () => {
    assert.throws(() => new CacheAuthToken({ sign: () => 't', refreshAfterMs: 900_000 }),
      (error: unknown) => error instanceof CacheConfigurationError && /refreshAfterMs must be > 0 and < 900000.*got 900000/.test(error.message));
    assert.throws(() => new CacheAuthToken({ sign: () => 't', refreshAfterMs: 0 }), CacheConfigurationError);
  });

  it('are signed with the Lambda environment\'s credentials, naming what is missing', () => {
    assert.deepEqual(credentialsFromEnv({ AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'session' }),
      { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'session' });
    assert.throws(() => credentialsFromEnv({ AWS_ACCESS_KEY_ID: 'AKID' }), /AWS_SECRET_ACCESS_KEY not set/);
  });
});

describe('cache auth from the environment (BALLAST_CACHE_AUTH)', () => {
  const iam = {
    STATE_TABLE_NAME: 'state', WORKER_VERSION: '7', BALLAST_CACHE_URL: 'rediss://cache.serverless.euw1.cache.amazonaws.com:6379',
    BALLAST_CACHE_CLUSTER: 'true', BALLAST_CACHE_AUTH: 'iam', BALLAST_CACHE_USER: 'Ballast-User', BALLAST_CACHE_NAME: 'ballast-cache',
    AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'session',
  };

  it('reads iam mode with its user, cache name and region; none is the default', () => {
    assert.deepEqual(cacheConfigFromEnv(iam).cacheAuth, { mode: 'iam', userId: 'ballast-user', cacheName: 'ballast-cache', region: 'eu-west-1' });
    assert.deepEqual(cacheConfigFromEnv({ ...iam, BALLAST_CACHE_AUTH: undefined }).cacheAuth, { mode: 'none' });
    assert.deepEqual(cacheConfigFromEnv({ ...iam, BALLAST_CACHE_AUTH: 'none', BALLAST_CACHE_USER: undefined }).cacheAuth, { mode: 'none' });
  });

  it('names every missing or malformed variable at once', () => {
    const problems = (env: NodeJS.ProcessEnv) => {
      try {
        cacheConfigFromEnv(env);
      } catch (error) {
        assert.ok(error instanceof CacheConfigurationError);
        return error.message;
      }
      assert.fail('no error');
    };
    const missing = problems({
      ...iam, BALLAST_CACHE_USER: undefined, BALLAST_CACHE_NAME: '', AWS_REGION: undefined, AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined,
    });
    for (const part of [
      "BALLAST_CACHE_USER is required when BALLAST_CACHE_AUTH is 'iam'", "BALLAST_CACHE_NAME is required when BALLAST_CACHE_AUTH is 'iam'",
      "AWS_REGION is required when BALLAST_CACHE_AUTH is 'iam'", 'AWS_ACCESS_KEY_ID is required', 'AWS_SECRET_ACCESS_KEY is required',
    ]) assert.ok(missing.includes(part), `${part} in: ${missing}`);
    const malformed = problems({ ...iam, BALLAST_CACHE_USER: '1user', BALLAST_CACHE_NAME: 'cache_name', BALLAST_CACHE_URL: 'redis://u:hunter2@cache:6379' });
    assert.match(malformed, /BALLAST_CACHE_USER must be an ElastiCache user id \(a letter, then letters, digits or '-', at most 40\), got '1user'/);
    assert.match(malformed, /BALLAST_CACHE_NAME must be an ElastiCache serverless cache name .* got 'cache_name'/);
    assert.match(malformed, /BALLAST_CACHE_AUTH 'iam' needs a rediss:\/\/ \(TLS\) BALLAST_CACHE_URL/);
    assert.ok(!malformed.includes('hunter2'), 'never echoes a password');
    assert.match(problems({ ...iam, BALLAST_CACHE_AUTH: 'IAM' }), /BALLAST_CACHE_AUTH must be 'iam' or 'none', got 'IAM'/);
  });

  it('gives the worker\'s readiness probe the same cache settings, only when it has a cache', () => {
    const worker = { ...iam, CONTROL_TABLE_NAME: 'control', DEAD_LETTER_QUEUE_URL: 'https://sqs/dlq', PARTNER_API_URL: 'https://partner', CARRIER_API_URL: 'https://carrier' };
    const config = workerConfigFromEnv(worker, []);
    assert.deepEqual([config.cacheUrl, config.cacheCluster, config.cacheAuth],
      [iam.BALLAST_CACHE_URL, true, { mode: 'iam', userId: 'ballast-user', cacheName: 'ballast-cache', region: 'eu-west-1' }]);
    assert.equal(workerConfigFromEnv({ ...worker, BALLAST_CACHE_URL: undefined }, []).cacheAuth, undefined);
    assert.throws(() => workerConfigFromEnv({ ...worker, BALLAST_CACHE_USER: undefined }, []), /worker configuration: .*BALLAST_CACHE_USER is required/);
  });

  it('turns iam mode into a client whose every connection asks for the current token', () => {
    // GIVEN the client options of an iam configuration
    const options = cacheConnectionOptions(cacheConfigFromEnv(iam), iam);
    assert.equal(options.auth?.username, 'ballast-user');
    const token = options.auth?.password() ?? '';
    assert.ok(token.startsWith('ballast-cache/?Action=connect&ResourceType=ServerlessCache&User=ballast-user&'), token);
    assert.equal(new URL(`http://${token}`).searchParams.get('X-Amz-Security-Token'), 'session');
    assert.equal(cacheConnectionOptions(cacheConfigFromEnv({ ...iam, BALLAST_CACHE_AUTH: 'none' })).auth, undefined);
    // WHEN clients are created with an auth source, THEN ioredis reads the password from it on each read
    let calls = 0;
    const auth = { username: 'u', password: () => `token ${++calls}` };
    const standalone = createCacheClient({ url: 'rediss://cache.internal:6379', auth });
    assert.ok(standalone instanceof Redis);
    assert.deepEqual([standalone.options.username, standalone.options.password, standalone.options.password], ['u', 'token 1', 'token 2']);
    const cluster = createCacheClient({ url: 'rediss://cache.internal:6379', cluster: true, auth });
    assert.ok(cluster instanceof Cluster);
    assert.deepEqual([cluster.options.redisOptions?.username, cluster.options.redisOptions?.password], ['u', 'token 3']);
    assert.throws(() => createCacheClient({ url: 'redis://user:pw@cache.internal', auth }), /credentials are given both in url and in auth/);
    standalone.disconnect();
    cluster.disconnect();
  });
});
