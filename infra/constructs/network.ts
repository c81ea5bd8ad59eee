import { Construct } from 'constructs';
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AnyPrincipal, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  GatewayVpcEndpointAwsService, InterfaceVpcEndpointAwsService, Port, SecurityGroup, SubnetType, Vpc, FlowLogDestination, FlowLogTrafficType,
  type GatewayVpcEndpoint, type InterfaceVpcEndpoint,
} from 'aws-cdk-lib/aws-ec2';

export interface BallastNetworkProps {
  /** @default 2 */
  readonly maxAzs?: number;
  /**
   * NAT gateways, for functions that call the internet (external APIs).
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

/** SQS actions ballast's functions call from the VPC (dead-letter sends, lock-wait requeues, deletes, retry delays, readiness). */
export const ENDPOINT_SQS_ACTIONS = [
  'sqs:SendMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl',
] as const;

/**
 * The VPC the functions and the cache live in: private subnets with NAT for external API calls, a
 * DynamoDB gateway endpoint and an SQS interface endpoint (so table and queue traffic never
 * crosses the NAT) whose policies admit only this stack's tables and queues, called by principals
 * of this account; one security group for every ballast function; the VPC's default security group
 * stripped of its rules; VPC flow logs.
 */
export class BallastNetwork extends Construct {
  readonly vpc: Vpc;
  readonly functionSecurityGroup: SecurityGroup;
  readonly dynamoDbEndpoint: GatewayVpcEndpoint;
  readonly sqsEndpoint: InterfaceVpcEndpoint;

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
      // Nothing uses the default group; left open, anything launched without a group could talk to the cache's subnets.
      restrictDefaultSecurityGroup: true,
    });
    this.dynamoDbEndpoint = this.vpc.addGatewayEndpoint('DynamoDb', { service: GatewayVpcEndpointAwsService.DYNAMODB });
    this.functionSecurityGroup = new SecurityGroup(this, 'Functions', {
      vpc: this.vpc,
      description: 'ballast Lambda functions',
      allowAllOutbound: true,
    });
    this.sqsEndpoint = this.vpc.addInterfaceEndpoint('Sqs', { service: InterfaceVpcEndpointAwsService.SQS, open: false });
    this.sqsEndpoint.connections.allowFrom(this.functionSecurityGroup, Port.tcp(443), 'functions reach SQS privately');
  }

  /**
   * Admits `actions` on `tableArns` through the DynamoDB endpoint. An endpoint with a policy admits
   * nothing else, so a compromised function cannot reach another account's table (exfiltration)
   * or this account's other tables through it.
   */
  allowTables(tableArns: readonly string[], actions: readonly string[]): void {
    this.dynamoDbEndpoint.addToPolicy(this.endpointStatement(actions, tableArns));
  }

  /** Admits `actions` on `queueArns` through the SQS endpoint; see {@link allowTables}. */
  allowQueues(queueArns: readonly string[], actions: readonly string[] = ENDPOINT_SQS_ACTIONS): void {
    this.sqsEndpoint.addToPolicy(this.endpointStatement(actions, queueArns));
  }

  private endpointStatement(actions: readonly string[], resources: readonly string[]): PolicyStatement {
    return new PolicyStatement({
      // Endpoint policies need a principal; the condition keeps it to this account's roles.
      principals: [new AnyPrincipal()],
      actions: [...actions],
      resources: [...resources],
      conditions: { StringEquals: { 'aws:PrincipalAccount': Stack.of(this).account } },
    });
  }
}
