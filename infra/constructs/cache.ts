import { Construct } from 'constructs';
import { RemovalPolicy } from 'aws-cdk-lib';
import { CfnServerlessCache } from 'aws-cdk-lib/aws-elasticache';
import { Port, SecurityGroup, SubnetType, type ISecurityGroup, type IVpc } from 'aws-cdk-lib/aws-ec2';

export interface BallastCacheProps {
  readonly vpc: IVpc;
  /** Only this security group (the functions') may connect. */
  readonly clientSecurityGroup: ISecurityGroup;
  /** @default RemovalPolicy.DESTROY */
  readonly removalPolicy?: RemovalPolicy;
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
    this.cache = new CfnServerlessCache(this, 'Valkey', {
      engine: 'valkey',
      serverlessCacheName: `${this.node.addr.slice(0, 20)}-cache`,
      description: 'ballast read cache (stream-invalidated)',
      subnetIds: props.vpc.selectSubnets({ subnetType: SubnetType.PRIVATE_WITH_EGRESS }).subnetIds,
      securityGroupIds: [this.securityGroup.securityGroupId],
    });
    this.cache.applyRemovalPolicy(props.removalPolicy ?? RemovalPolicy.DESTROY);
    this.url = `rediss://${this.cache.attrEndpointAddress}:${this.cache.attrEndpointPort}`;
  }
}
