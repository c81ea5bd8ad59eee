import { createHash } from 'node:crypto';
import { Construct } from 'constructs';
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { CfnServerlessCache, CfnUser, CfnUserGroup } from 'aws-cdk-lib/aws-elasticache';
import { Port, SecurityGroup, SubnetType, type ISecurityGroup, type IVpc } from 'aws-cdk-lib/aws-ec2';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { stackInstanceSuffix } from './physical-name.ts';
import { BallastConfigError } from './validation.ts';

/**
 * What the functions' ElastiCache user may do: exactly the commands ballast and ioredis send, on
 * the keys of the cached entities only (`<entity>:{<id>}:v<n>[:tomb|:tickets]`, see `shared/cache/keys.ts`),
 * no pub/sub channel, so a compromised or buggy function can neither FLUSHALL, CONFIG nor read
 * other keys.
 *
 * - `get`, `hmget`: cache-aside reads (`EntityCache.get`).
 * - `evalsha`, `eval`: the ticket/fill/invalidate/evict Lua scripts (ioredis falls back to EVAL
 *   on NOSCRIPT); scripts run with the caller's ACL, hence the commands they call:
 *   `get`, `set`, `del`, `exists`, `pttl`, `hget`, `hset`, `pexpire`, `time`, and for the fill
 *   tickets `zadd`, `zrem`, `zscore`, `zcard`, `zrangebyscore`, `zremrangebyscore`.
 * - `ping`: the worker's readiness probe.
 * - `info`: ioredis' ready check on every connection (and cluster node).
 * - `client|setname`: ioredis names its connections (`connectionName`).
 * - `cluster|slots`, `cluster|info`: ioredis Cluster's slot discovery and ready check.
 *
 * - `scan`: the full reconcile (`EntityCache.reconcile`), which the invalidation repair falls back
 *   to when a failed stream batch is no longer in the stream, and `ballast cache check` runs.
 *
 * `AUTH` and `HELLO` are always allowed. test/integration/cache-iam-auth.test.ts runs the cache
 * through a redis-server user with exactly this string, standalone and in cluster mode.
 */
export function cacheAccessString(entities: readonly string[]): string {
  return ['on', ...entities.map((entity) => `~${entity}:*`), ...CACHE_COMMANDS].join(' ');
}

const CACHE_COMMANDS = [
  '-@all',
  '+get', '+hmget', '+evalsha', '+eval',
  '+set', '+del', '+exists', '+pttl', '+hget', '+hset', '+pexpire', '+time',
  '+zadd', '+zrem', '+zscore', '+zcard', '+zrangebyscore', '+zremrangebyscore',
  '+scan', '+ping', '+info', '+client|setname', '+cluster|slots', '+cluster|info',
];

/** The `default` user every user group must contain: disabled, no command, no key. */
const DISABLED_ACCESS_STRING = 'off -@all';

export interface BallastCacheProps {
  readonly vpc: IVpc;
  /** Only this security group (the functions') may connect. */
  readonly clientSecurityGroup: ISecurityGroup;
  /**
   * The cached entities' names (`workloadEntities(WORKLOADS)`): the functions' user may touch
   * their keys only. A name added later widens the user's access string in place (no replacement).
   */
  readonly entities: readonly string[];
  /**
   * Applied to the cache and to its users, user group and the disabled default user's password
   * (a retained cache keeps the user group it was created with).
   * @default RemovalPolicy.DESTROY
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Valkey major version, pinned so an engine upgrade is a reviewed change, not a surprise.
   * @default '8'
   */
  readonly majorEngineVersion?: string;
  /**
   * Most data the cache may hold, in GB (1–5,000): the ceiling of its storage bill.
   * @default 5
   */
  readonly maxDataStorageGb?: number;
  /**
   * Most ElastiCache Processing Units per second (1,000–15,000,000): the ceiling of its compute bill.
   * @default 100_000
   */
  readonly maxEcpuPerSecond?: number;
}

/**
 * ElastiCache Serverless for Valkey in the private subnets. Serverless caches are TLS-only and
 * cluster-mode, which is why cache keys carry a hash tag; ingress is from the functions' security
 * group only, on the cache port. Clients authenticate with IAM: one IAM-enabled user, limited to
 * {@link cacheAccessString}, in the cache's user group (with a disabled `default` user), so
 * nothing without `elasticache:Connect` ({@link grantConnect}) gets in, whatever the network allows.
 *
 * Names are physical and account-wide per region, so they derive from the stack's id: unique per
 * stack instance (a stack recreated after a failed first create, or after a delete that retained
 * the cache, gets new names), and the cache's name also changes with the inputs whose change
 * replaces it (its subnets), so CloudFormation can create the replacement before deleting the old.
 */
export class BallastCache extends Construct {
  readonly cache: CfnServerlessCache;
  readonly securityGroup: SecurityGroup;
  /** The IAM-enabled user the functions connect as. */
  readonly user: CfnUser;
  readonly userGroup: CfnUserGroup;
  /** `rediss://<endpoint>:<port>` for `BALLAST_CACHE_URL`. */
  readonly url: string;
  /** The serverless cache's name (a token), which IAM auth tokens are signed for. */
  readonly cacheName: string;
  /** The IAM-enabled user's id, equal to its name (a token). */
  readonly userId: string;
  /**
   * What a function needs to connect: `BALLAST_CACHE_URL`, `BALLAST_CACHE_CLUSTER` (`true`),
   * `BALLAST_CACHE_AUTH` (`iam`), `BALLAST_CACHE_USER` and `BALLAST_CACHE_NAME`. Give it
   * {@link grantConnect} too.
   */
  readonly environment: Readonly<Record<string, string>>;

  constructor(scope: Construct, id: string, props: BallastCacheProps) {
    super(scope, id);
    this.securityGroup = new SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'ballast cache: reachable from ballast functions only',
      allowAllOutbound: false,
    });
    this.securityGroup.addIngressRule(props.clientSecurityGroup, Port.tcp(6379), 'ballast functions');
    const maxDataStorageGb = props.maxDataStorageGb ?? 5;
    const maxEcpuPerSecond = props.maxEcpuPerSecond ?? 100_000;
    if (!Number.isInteger(maxDataStorageGb) || maxDataStorageGb < 1 || maxDataStorageGb > 5_000) {
      throw new BallastConfigError(this, `maxDataStorageGb ${maxDataStorageGb} is outside 1–5,000 GB, ElastiCache Serverless's range: set a whole number of GB in it.`);
    }
    if (!Number.isInteger(maxEcpuPerSecond) || maxEcpuPerSecond < 1_000 || maxEcpuPerSecond > 15_000_000) {
      throw new BallastConfigError(this, `maxEcpuPerSecond ${maxEcpuPerSecond} is outside 1,000–15,000,000, ElastiCache Serverless's range.`);
    }
    if (props.entities.length === 0) {
      throw new BallastConfigError(this, 'no workload caches an entity, so the cache user could touch no key: register a workload with `entities` (workloads/registry.ts).');
    }
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.DESTROY;
    const instance = stackInstanceSuffix();

    // IAM users need UserId = UserName; ElastiCache stores both lowercase (ours already are).
    this.userId = `ballast-${instance}`;
    this.user = new CfnUser(this, 'FunctionsUser', {
      engine: 'valkey',
      userId: this.userId,
      userName: this.userId,
      authenticationMode: { Type: 'iam' },
      accessString: cacheAccessString(props.entities),
    });
    // Every user group must contain a user named `default`; a Valkey group admits only users with
    // an authentication mechanism, so this one has a password nobody knows (generated into
    // Secrets Manager, never in the template) and is disabled anyway.
    const defaultPassword = new Secret(this, 'DefaultUserPassword', {
      description: 'Password of the ballast cache\'s disabled "default" user (required by ElastiCache, never used)',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy,
    });
    const defaultUser = new CfnUser(this, 'DefaultUser', {
      engine: 'valkey',
      userId: `ballast-${instance}-default`,
      userName: 'default',
      authenticationMode: { Type: 'password', Passwords: [defaultPassword.secretValue.unsafeUnwrap()] },
      accessString: DISABLED_ACCESS_STRING,
    });
    this.userGroup = new CfnUserGroup(this, 'UserGroup', {
      engine: 'valkey',
      userGroupId: `ballast-${instance}-users`,
      userIds: [this.userId, defaultUser.userId],
    });
    this.userGroup.addResourceDependency(this.user);
    this.userGroup.addResourceDependency(defaultUser);

    const subnetIds = props.vpc.selectSubnets({ subnetType: SubnetType.PRIVATE_WITH_EGRESS }).subnetIds;
    this.cacheName = `ballast-${replacementKey(this, { subnetIds })}-${instance}`;
    this.cache = new CfnServerlessCache(this, 'Valkey', {
      engine: 'valkey',
      majorEngineVersion: props.majorEngineVersion ?? '8',
      cacheUsageLimits: { dataStorage: { maximum: maxDataStorageGb, unit: 'GB' }, ecpuPerSecond: { maximum: maxEcpuPerSecond } },
      serverlessCacheName: this.cacheName,
      description: 'ballast read cache (stream-invalidated)',
      subnetIds,
      securityGroupIds: [this.securityGroup.securityGroupId],
      userGroupId: this.userGroup.userGroupId,
    });
    this.cache.addResourceDependency(this.userGroup);
    for (const resource of [this.cache, this.userGroup, this.user, defaultUser]) resource.applyRemovalPolicy(removalPolicy);
    this.url = `rediss://${this.cache.attrEndpointAddress}:${this.cache.attrEndpointPort}`;
    this.environment = {
      BALLAST_CACHE_URL: this.url,
      BALLAST_CACHE_CLUSTER: 'true',
      BALLAST_CACHE_AUTH: 'iam',
      BALLAST_CACHE_USER: this.userId,
      BALLAST_CACHE_NAME: this.cacheName,
    };
  }

  /**
   * Lets `grantee` connect as the functions' user: `elasticache:Connect` on this cache and on
   * that user, the two resources IAM auth checks. The grantee also needs {@link environment}.
   */
  grantConnect(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({ grantee, actions: ['elasticache:Connect'], resourceArns: [this.cache.attrArn, this.user.attrArn] });
  }
}

/**
 * 8 hex digits of a hash of the cache's create-only properties (CloudFormation replaces the cache
 * when `SubnetIds`, `KmsKeyId` or `SnapshotArnsToRestore` change; ballast sets only the subnets),
 * resolved to their template form: a change of them yields a new name, so the replacement can be
 * created while the old cache still exists. (A change CloudFormation cannot see at synth time,
 * such as a subnet replaced under the same logical id, keeps the name and fails the update
 * instead of losing the cache: rename by hand then.)
 */
function replacementKey(scope: Construct, createOnly: { readonly subnetIds: readonly string[] }): string {
  const resolved = JSON.stringify(Stack.of(scope).resolve(createOnly));
  return createHash('sha256').update(resolved).digest('hex').slice(0, 8);
}
