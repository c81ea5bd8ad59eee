import type { CacheConnectionOptions } from './connection.ts';
import { credentialsFromEnv, iamAuthToken } from './iam-auth.ts';

/** Values of `BALLAST_CACHE_AUTH`. */
export const CACHE_AUTH_MODES = {
  /** No credentials (a local redis-server; ElastiCache refuses unauthenticated clients once it has a user group). */
  none: 'none',
  /** ElastiCache IAM auth: the function's execution role signs a short-lived token as the password. */
  iam: 'iam',
} as const;
export type CacheAuthMode = (typeof CACHE_AUTH_MODES)[keyof typeof CACHE_AUTH_MODES];

/** How a function authenticates to the cache. */
export type CacheAuthConfig =
  | { readonly mode: typeof CACHE_AUTH_MODES.none }
  | {
    readonly mode: typeof CACHE_AUTH_MODES.iam;
    /** `BALLAST_CACHE_USER`: the IAM-enabled ElastiCache user's id (= its name), lowercase. */
    readonly userId: string;
    /** `BALLAST_CACHE_NAME`: the serverless cache's name, which the token is signed for, lowercase. */
    readonly cacheName: string;
    /** `AWS_REGION`. */
    readonly region: string;
  };

/** Where the cache is and how to authenticate to it, all from environment variables. */
export interface CacheConnectionConfig {
  /** `BALLAST_CACHE_URL`: `redis://…` or `rediss://…` (TLS). */
  readonly cacheUrl: string;
  /** `BALLAST_CACHE_CLUSTER`: `true` for cluster mode (ElastiCache Serverless). @default false */
  readonly cacheCluster: boolean;
  /** `BALLAST_CACHE_AUTH`: `iam` or `none`. @default { mode: 'none' } */
  readonly cacheAuth: CacheAuthConfig;
}

/** ElastiCache identifiers: a letter, then letters, digits or hyphens. */
const ELASTICACHE_ID = /^[A-Za-z][A-Za-z0-9-]*$/;

/**
 * Reads {@link CacheConnectionConfig} from `env`: `BALLAST_CACHE_URL`, `BALLAST_CACHE_CLUSTER`
 * (`true`/`false`, default false) and `BALLAST_CACHE_AUTH` (`iam`/`none`, default none), which for
 * `iam` needs `BALLAST_CACHE_USER`, `BALLAST_CACHE_NAME`, a `rediss://` URL and the Lambda
 * runtime's `AWS_REGION`, `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
 * Never throws: every missing or malformed variable is appended to `problems`, so the caller can
 * name them all at once in its own error.
 */
export function cacheConnectionFromEnv(env: NodeJS.ProcessEnv, problems: string[]): CacheConnectionConfig {
  const cacheUrl = env.BALLAST_CACHE_URL ?? '';
  if (!cacheUrl) problems.push('BALLAST_CACHE_URL is required');
  const cluster = env.BALLAST_CACHE_CLUSTER ?? '';
  if (!['', 'true', 'false'].includes(cluster)) problems.push(`BALLAST_CACHE_CLUSTER must be 'true' or 'false', got '${cluster}'`);
  const mode = env.BALLAST_CACHE_AUTH || CACHE_AUTH_MODES.none;
  let cacheAuth: CacheAuthConfig = { mode: CACHE_AUTH_MODES.none };
  if (mode === CACHE_AUTH_MODES.iam) {
    const id = (name: 'BALLAST_CACHE_USER' | 'BALLAST_CACHE_NAME', what: string, maxLength: number) => {
      const value = env[name] ?? '';
      if (!value) problems.push(`${name} is required when BALLAST_CACHE_AUTH is 'iam'`);
      else if (!ELASTICACHE_ID.test(value) || value.length > maxLength) {
        problems.push(`${name} must be ${what} (a letter, then letters, digits or '-', at most ${maxLength}), got '${value}'`);
      }
      return value.toLowerCase();
    };
    const userId = id('BALLAST_CACHE_USER', 'an ElastiCache user id', 40);
    const cacheName = id('BALLAST_CACHE_NAME', 'an ElastiCache serverless cache name', 40);
    const region = env.AWS_REGION ?? '';
    if (!region) problems.push("AWS_REGION is required when BALLAST_CACHE_AUTH is 'iam' (the token is signed for it)");
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']) {
      if (!env[name]) problems.push(`${name} is required when BALLAST_CACHE_AUTH is 'iam' (the token is signed with the function's credentials)`);
    }
    if (cacheUrl && !cacheUrl.startsWith('rediss://')) {
      problems.push(`BALLAST_CACHE_AUTH 'iam' needs a rediss:// (TLS) BALLAST_CACHE_URL: ElastiCache accepts IAM tokens over TLS only, got '${cacheUrl.split('@').pop()}'`);
    }
    cacheAuth = { mode: CACHE_AUTH_MODES.iam, userId, cacheName, region };
  } else if (mode !== CACHE_AUTH_MODES.none) {
    problems.push(`BALLAST_CACHE_AUTH must be 'iam' or 'none', got '${mode}'`);
  }
  return { cacheUrl, cacheCluster: cluster === 'true', cacheAuth };
}

/**
 * The `url`, `cluster` and `auth` options of {@link createCacheClient} for `config`: for IAM auth,
 * a token source (signed with the credentials in `env`, the Lambda runtime's, re-signed every 10 minutes)
 * behind `auth.password`, created here once, so every client of the container shares it.
 *
 * @example
 * import { cacheConnectionOptions, createCacheClient } from '../shared/cache/index.ts';
 * const redis = createCacheClient({ ...cacheConnectionOptions(config), onError });
 */
export function cacheConnectionOptions(
  config: CacheConnectionConfig, env: NodeJS.ProcessEnv = process.env,
): Pick<CacheConnectionOptions, 'url' | 'cluster' | 'auth'> {
  const { cacheAuth } = config;
  if (cacheAuth.mode === CACHE_AUTH_MODES.none) return { url: config.cacheUrl, cluster: config.cacheCluster };
  const token = iamAuthToken({
    cacheName: cacheAuth.cacheName, userId: cacheAuth.userId, region: cacheAuth.region, credentials: () => credentialsFromEnv(env),
  });
  return { url: config.cacheUrl, cluster: config.cacheCluster, auth: { username: cacheAuth.userId, password: () => token.token() } };
}
