import { Construct } from 'constructs';
import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, Billing, StreamViewType, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { CONTROL_TABLE, STATE_TABLE } from '../../shared/tables/index.ts';

export interface BallastTablesProps {
  /**
   * What happens to the tables when they leave the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection on both tables.
   * @default true
   */
  readonly deletionProtection?: boolean;
}

/**
 * The state table (business items; stream with old and new images drives cache invalidation;
 * point-in-time recovery) and the control table (idempotency records and lease locks, TTL for
 * garbage collection). Both on-demand.
 */
export class BallastTables extends Construct {
  readonly state: TableV2;
  readonly control: TableV2;

  constructor(scope: Construct, id: string, props: BallastTablesProps = {}) {
    super(scope, id);
    const common = {
      billing: Billing.onDemand(),
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      deletionProtection: props.deletionProtection ?? true,
    };
    this.state = new TableV2(this, 'State', {
      ...common,
      partitionKey: { name: STATE_TABLE.partitionKey, type: AttributeType.STRING },
      dynamoStream: StreamViewType.NEW_AND_OLD_IMAGES,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
    this.control = new TableV2(this, 'Control', {
      ...common,
      partitionKey: { name: CONTROL_TABLE.partitionKey, type: AttributeType.STRING },
      timeToLiveAttribute: CONTROL_TABLE.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    });
  }
}
