import { Construct } from 'constructs';
import { RemovalPolicy } from 'aws-cdk-lib';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  GatewayVpcEndpointAwsService, InterfaceVpcEndpointAwsService, Port, SecurityGroup, SubnetType, Vpc, FlowLogDestination, FlowLogTrafficType,
} from 'aws-cdk-lib/aws-ec2';

export interface BallastNetworkProps {
  /** @default 2 */
  readonly maxAzs?: number;
  /**
   * NAT gateways, for functions that call the internet (the partner API).
   * @default 1
   */
  readonly natGateways?: number;
  /**
   * How long the flow log (rejected traffic) is kept.
   * @default RetentionDays.ONE_MONTH
   */
  readonly flowLogRetention?: RetentionDays;
  /** @default RemovalPolicy.DESTROY */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The VPC the functions and the cache live in: private subnets with NAT for partner calls, a
 * DynamoDB gateway endpoint and an SQS interface endpoint (so table and queue traffic never
 * crosses the NAT), one security group for every ballast function, VPC flow logs.
 */
export class BallastNetwork extends Construct {
  readonly vpc: Vpc;
  readonly functionSecurityGroup: SecurityGroup;

  constructor(scope: Construct, id: string, props: BallastNetworkProps = {}) {
    super(scope, id);
    // Its own group, so its retention is the environment's rather than CDK's default of two years.
    const flowLogs = new LogGroup(this, 'FlowLogs', {
      retention: props.flowLogRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.DESTROY,
    });
    this.vpc = new Vpc(this, 'Vpc', {
      maxAzs: props.maxAzs ?? 2,
      natGateways: props.natGateways ?? 1,
      subnetConfiguration: [
        { name: 'public', subnetType: SubnetType.PUBLIC },
        { name: 'private', subnetType: SubnetType.PRIVATE_WITH_EGRESS },
      ],
      flowLogs: { all: { destination: FlowLogDestination.toCloudWatchLogs(flowLogs), trafficType: FlowLogTrafficType.REJECT } },
    });
    this.vpc.addGatewayEndpoint('DynamoDb', { service: GatewayVpcEndpointAwsService.DYNAMODB });
    this.functionSecurityGroup = new SecurityGroup(this, 'Functions', {
      vpc: this.vpc,
      description: 'ballast Lambda functions',
      allowAllOutbound: true,
    });
    const sqsEndpoint = this.vpc.addInterfaceEndpoint('Sqs', { service: InterfaceVpcEndpointAwsService.SQS, open: false });
    sqsEndpoint.connections.allowFrom(this.functionSecurityGroup, Port.tcp(443), 'functions reach SQS privately');
  }
}
