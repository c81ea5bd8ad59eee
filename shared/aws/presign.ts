import { createHash, createHmac } from 'node:crypto';

/** AWS credentials as the Lambda runtime provides them (`AWS_ACCESS_KEY_ID`, …). */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Present for temporary credentials (a Lambda execution role's always are). */
  readonly sessionToken?: string;
}

/** What {@link presignUrl} signs. */
export interface PresignRequest {
  /** HTTP method, e.g. `GET`. */
  readonly method: string;
  /** The `host` header value, the only signed header. */
  readonly host: string;
  /**
   * Absolute path; each segment is URI-encoded once (as S3 does), so keep it free of characters
   * that need encoding when signing for another service.
   * @default '/'
   */
  readonly path?: string;
  /** Query parameters besides the `X-Amz-*` ones this function adds. @default - none */
  readonly query?: Readonly<Record<string, string>>;
  /** Signing name of the service, e.g. `s3`, `elasticache`. */
  readonly service: string;
  readonly region: string;
  readonly credentials: AwsCredentials;
  /** How long the URL stays valid after `now` (`X-Amz-Expires`), 1–604,800 s. */
  readonly expiresInSeconds: number;
  /** The signing time (`X-Amz-Date`). */
  readonly now: Date;
  /**
   * Hex SHA-256 of the payload, or `UNSIGNED-PAYLOAD` where the service allows it (S3).
   * @default - the SHA-256 of the empty string, for a request without a body
   */
  readonly payloadHash?: string;
  /** Scheme of the returned URL; the signature does not depend on it. @default 'https' */
  readonly protocol?: 'https' | 'http';
}

/** SHA-256 of zero bytes, the payload hash of a request without a body. */
export const EMPTY_PAYLOAD_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** The longest validity SigV4 allows for a presigned URL: 7 days. */
const MAX_EXPIRES_SECONDS = 604_800;

/**
 * Presigns a request with AWS Signature Version 4 in the query string: returns the URL with
 * `X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`
 * (`host` only), `X-Amz-Security-Token` when the credentials have a session token, and
 * `X-Amz-Signature`. Synchronous and local: nothing is sent, no credentials are fetched.
 *
 * @throws RangeError when `expiresInSeconds` is not a whole number of seconds in 1–604,800, or `now` is invalid
 * @example
 * import { presignUrl } from '../shared/aws/index.ts';
 * const url = presignUrl({
 *   method: 'GET', host: 'examplebucket.s3.amazonaws.com', path: '/test.txt', service: 's3', region: 'us-east-1',
 *   credentials: { accessKeyId, secretAccessKey }, expiresInSeconds: 86_400, now: new Date(), payloadHash: 'UNSIGNED-PAYLOAD',
 * });
 */
export function presignUrl(request: PresignRequest): string {
  const { expiresInSeconds, now, credentials } = request;
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > MAX_EXPIRES_SECONDS) {
    throw new RangeError(`presignUrl: expiresInSeconds must be a whole number in 1–${MAX_EXPIRES_SECONDS}, got ${expiresInSeconds}`);
  }
  if (Number.isNaN(now.getTime())) throw new RangeError('presignUrl: now is an invalid Date');
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const scope = `${amzDate.slice(0, 8)}/${request.region}/${request.service}/aws4_request`;
  const params: Record<string, string> = {
    ...request.query,
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Credential': `${credentials.accessKeyId}/${scope}`,
    'X-Amz-Date': amzDate,
    'X-Amz-Expires': String(expiresInSeconds),
    'X-Amz-SignedHeaders': 'host',
    ...(credentials.sessionToken ? { 'X-Amz-Security-Token': credentials.sessionToken } : {}),
  };
  const query = canonicalQuery(params);
  const path = canonicalPath(request.path ?? '/');
  const canonicalRequest = [
    request.method.toUpperCase(), path, query, `host:${request.host.trim()}\n`, 'host', request.payloadHash ?? EMPTY_PAYLOAD_SHA256,
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const signingKey = [amzDate.slice(0, 8), request.region, request.service, 'aws4_request']
    .reduce<Buffer | string>((key, part) => hmac(key, part), `AWS4${credentials.secretAccessKey}`);
  const signature = hmac(signingKey, stringToSign).toString('hex');
  return `${request.protocol ?? 'https'}://${request.host}${path}?${query}&X-Amz-Signature=${signature}`;
}

/** RFC 3986 percent-encoding: everything but unreserved characters (`A-Z a-z 0-9 - . _ ~`). */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Encoded `name=value` pairs sorted by name (then value), joined with `&`. */
function canonicalQuery(params: Readonly<Record<string, string>>): string {
  return Object.entries(params)
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

function canonicalPath(path: string): string {
  if (!path.startsWith('/')) throw new RangeError(`presignUrl: path must start with '/', got '${path}'`);
  return path.split('/').map(uriEncode).join('/');
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}
