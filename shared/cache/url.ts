import { CacheConfigurationError } from './errors.ts';

/** Where a cache URL points, and the credentials it carries. */
export interface CacheTarget {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  readonly db: number;
  readonly username?: string;
  readonly password?: string;
}

/** Parses a `redis://` or `rediss://` URL, refusing anything else with what to write instead. */
export function parseCacheUrl(url: string): CacheTarget {
  const fix = "use 'redis://host:6379' or, for TLS, 'rediss://host:6379'";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new CacheConfigurationError(`cache url '${redact(url)}' is not a URL: ${fix}`, { cause });
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new CacheConfigurationError(`cache url scheme '${parsed.protocol}' is not supported: ${fix}`);
  }
  if (!parsed.hostname) throw new CacheConfigurationError(`cache url '${redact(url)}' has no host: ${fix}`);
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new CacheConfigurationError(`cache url path must be a database number, got '${parsed.pathname}'`);
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port ? Number(parsed.port) : 6379,
    tls: parsed.protocol === 'rediss:',
    db,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
  };
}

/** The URL without its password, for error messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
