import { presignUrl, type AwsCredentials } from '../aws/index.ts';
import { withDefaults } from '../options/index.ts';
import { CacheConfigurationError } from './errors.ts';

/** How long an ElastiCache IAM auth token is accepted after it was signed: 15 minutes, the service's maximum. */
export const IAM_AUTH_TOKEN_EXPIRES_SECONDS = 900;

/** What an ElastiCache IAM auth token is signed for. */
export interface IamAuthTokenRequest {
  /** The serverless cache's name (`ServerlessCacheName`); lowercased, as ElastiCache stores it. */
  readonly cacheName: string;
  /** The IAM-enabled ElastiCache user's id (equal to its name); lowercased, as ElastiCache stores it. */
  readonly userId: string;
  readonly region: string;
  readonly credentials: AwsCredentials;
  /** The signing time. */
  readonly now: Date;
}

/**
 * An ElastiCache Serverless IAM auth token, the password of an IAM-enabled user in `AUTH`/`HELLO`:
 * `GET http://<cacheName>/?Action=connect&User=<userId>&ResourceType=ServerlessCache` presigned
 * with SigV4 for the `elasticache` service, valid for {@link IAM_AUTH_TOKEN_EXPIRES_SECONDS}, with
 * the `http://` prefix removed. Signing is local and synchronous.
 *
 * @example
 * import { elastiCacheIamAuthToken } from '../shared/cache/index.ts';
 * const password = elastiCacheIamAuthToken({ cacheName, userId, region: 'eu-west-1', credentials, now: new Date() });
 */
export function elastiCacheIamAuthToken(request: IamAuthTokenRequest): string {
  const url = presignUrl({
    method: 'GET',
    host: request.cacheName.toLowerCase(),
    path: '/',
    query: { Action: 'connect', User: request.userId.toLowerCase(), ResourceType: 'ServerlessCache' },
    service: 'elasticache',
    region: request.region,
    credentials: request.credentials,
    expiresInSeconds: IAM_AUTH_TOKEN_EXPIRES_SECONDS,
    now: request.now,
    protocol: 'http',
  });
  return url.slice('http://'.length);
}

/**
 * The credentials of the Lambda execution role, as the runtime puts them in the environment.
 * Read on every signing (cheap), so nothing holds on to a copy.
 *
 * @throws CacheConfigurationError naming the missing variables
 */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): AwsCredentials {
  const missing = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new CacheConfigurationError(`IAM cache auth needs AWS credentials in the environment: ${missing.join(', ')} not set`);
  }
  return {
    accessKeyId: env.AWS_ACCESS_KEY_ID as string,
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY as string,
    ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
  };
}

export interface CacheAuthTokenOptions {
  /** Produces a new token for the signing time `nowMs` (epoch ms). */
  readonly sign: (nowMs: number) => string;
  /**
   * Age after which the next {@link CacheAuthToken.token} call signs a new token. Below the
   * 15-minute validity, so a token handed to a connection attempt always has minutes left.
   * @default 600_000 (10 minutes)
   */
  readonly refreshAfterMs?: number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

const tokenDefaults = { refreshAfterMs: 600_000, nowMs: Date.now };

/**
 * A token that is signed once and reused until it is `refreshAfterMs` old (or the clock went
 * backwards), then signed again: the password source of a cache client whose credentials expire.
 * Construct it with {@link iamAuthToken} for ElastiCache IAM auth.
 *
 * @example
 * import { CacheAuthToken, createCacheClient } from '../shared/cache/index.ts';
 * const token = new CacheAuthToken({ sign: (nowMs) => signSomething(nowMs) });
 * const redis = createCacheClient({ url, auth: { username: 'app', password: () => token.token() } });
 */
export class CacheAuthToken {
  readonly #sign: (nowMs: number) => string;
  readonly #refreshAfterMs: number;
  readonly #nowMs: () => number;
  #current: { readonly value: string; readonly signedAtMs: number } | undefined;

  constructor(options: CacheAuthTokenOptions) {
    const merged = withDefaults(tokenDefaults, options);
    const maxMs = IAM_AUTH_TOKEN_EXPIRES_SECONDS * 1000;
    if (!(merged.refreshAfterMs > 0 && merged.refreshAfterMs < maxMs)) {
      throw new CacheConfigurationError(
        `CacheAuthToken: refreshAfterMs must be > 0 and < ${maxMs} (the token's validity), got ${merged.refreshAfterMs}: a token older than its validity fails AUTH`,
      );
    }
    this.#sign = merged.sign;
    this.#refreshAfterMs = merged.refreshAfterMs;
    this.#nowMs = merged.nowMs;
  }

  /** The current token, signed anew when the last one is `refreshAfterMs` old. */
  token(): string {
    const nowMs = this.#nowMs();
    const current = this.#current;
    if (current && nowMs >= current.signedAtMs && nowMs - current.signedAtMs < this.#refreshAfterMs) return current.value;
    const value = this.#sign(nowMs);
    this.#current = { value, signedAtMs: nowMs };
    return value;
  }
}

export interface IamAuthTokenOptions {
  readonly cacheName: string;
  readonly userId: string;
  readonly region: string;
  /** @default - the Lambda environment's credentials ({@link credentialsFromEnv}), read at each signing */
  readonly credentials?: () => AwsCredentials;
  /** @default 600_000 (see {@link CacheAuthTokenOptions.refreshAfterMs}) */
  readonly refreshAfterMs?: number;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * A {@link CacheAuthToken} that signs ElastiCache IAM auth tokens ({@link elastiCacheIamAuthToken}).
 *
 * @example
 * import { createCacheClient, iamAuthToken } from '../shared/cache/index.ts';
 * const token = iamAuthToken({ cacheName: 'ballast-…', userId: 'ballast-…', region: process.env.AWS_REGION! });
 * const redis = createCacheClient({ url, cluster: true, auth: { username: 'ballast-…', password: () => token.token() } });
 */
export function iamAuthToken(options: IamAuthTokenOptions): CacheAuthToken {
  const credentials = options.credentials ?? (() => credentialsFromEnv());
  return new CacheAuthToken({
    sign: (nowMs) => elastiCacheIamAuthToken({
      cacheName: options.cacheName, userId: options.userId, region: options.region, credentials: credentials(), now: new Date(nowMs),
    }),
    refreshAfterMs: options.refreshAfterMs,
    nowMs: options.nowMs,
  });
}
