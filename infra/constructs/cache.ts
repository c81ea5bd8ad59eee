import { Construct } from 'constructs';
import { RemovalPolicy } from 'aws-cdk-lib';
import { CfnServerlessCache } from 'aws-cdk-lib/aws-elasticache';
import { Port, SecurityGroup, SubnetType, type ISecurityGroup, type IVpc } from 'aws-cdk-lib/aws-ec2';
import { BallastConfigError } from './validation.ts';

export interface BallastCacheProps {
  readonly vpc: IVpc;
  /** Only this security group (the functions') may connect. */
  readonly clientSecurityGroup: ISecurityGroup;
  /** @default RemovalPolicy.DESTROY */
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
 * group only, on the cache port.
 */
export class BallastCache extends Construct {
  readonly cache: CfnServerlessCache;
  readonly securityGroup: SecurityGroup;
  /** `rediss://<endpoint>:<port>` for `BALLAST_CACHE_URL`. */
  readonly url: string;

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
    this.cache = new CfnServerlessCache(this, 'Valkey', {
      engine: 'valkey',
      majorEngineVersion: props.majorEngineVersion ?? '8',
      cacheUsageLimits: { dataStorage: { maximum: maxDataStorageGb, unit: 'GB' }, ecpuPerSecond: { maximum: maxEcpuPerSecond } },
      serverlessCacheName: `${this.node.addr.slice(0, 20)}-cache`,
      description: 'ballast read cache (stream-invalidated)',
      subnetIds: props.vpc.selectSubnets({ subnetType: SubnetType.PRIVATE_WITH_EGRESS }).subnetIds,
      securityGroupIds: [this.securityGroup.securityGroupId],
    });
    this.cache.applyRemovalPolicy(props.removalPolicy ?? RemovalPolicy.DESTROY);
    this.url = `rediss://${this.cache.attrEndpointAddress}:${this.cache.attrEndpointPort}`;
  }
}
