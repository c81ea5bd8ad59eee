import { Construct } from 'constructs';
import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, Billing, StreamViewType, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { CONTROL_TABLE, STATE_TABLE } from '../../shared/tables/index.ts';

/**
 * What a `TransactWriteItems` writer needs: DynamoDB authorizes a transaction item by item, by the
 * action each item performs (Put, Update, Delete, ConditionCheck), plus GetItem for point reads.
 * No Scan, Query or batch write: nothing in the functions uses them (the worker's one batch read,
 * of idempotency records, is granted on the control table alone: {@link SCREENING_ACTION}).
 */
export const TRANSACTIONAL_ITEM_ACTIONS = [
  'dynamodb:ConditionCheckItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem',
] as const;

/** How the worker screens a batch's idempotency records (`IdempotencyStore.screen`): one consistent read of many keys. */
export const SCREENING_ACTION = 'dynamodb:BatchGetItem';

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

  /**
   * For the worker: item-level transactional writes and point reads on both tables
   * ({@link TRANSACTIONAL_ITEM_ACTIONS}), and the batch read that screens idempotency records on the
   * control table ({@link SCREENING_ACTION}), on the table ARNs only (no index, no stream).
   */
  grantJobTransactions(grantee: IGrantable): void {
    for (const { table, actions } of this.jobTransactionAccess) table.grant(grantee, ...actions);
  }

  /**
   * What {@link grantJobTransactions} grants, table by table: the one list a VPC endpoint's policy
   * must admit as well, or the call the role allows is refused on AWS (and nowhere else).
   */
  get jobTransactionAccess(): ReadonlyArray<{ readonly table: TableV2; readonly actions: readonly string[] }> {
    return [
      { table: this.state, actions: TRANSACTIONAL_ITEM_ACTIONS },
      { table: this.control, actions: [...TRANSACTIONAL_ITEM_ACTIONS, SCREENING_ACTION] },
    ];
  }

  /** For readers of the state table (the read API): `dynamodb:GetItem` only. */
  grantStateReads(grantee: IGrantable): void {
    this.state.grant(grantee, 'dynamodb:GetItem');
  }
}
