import { CreateTableCommand, UpdateTimeToLiveCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CONTROL_TABLE, STATE_TABLE } from '../../shared/tables/index.ts';

/** Creates a state table (with its stream) and a control table (with TTL) shaped as the stack's. */
export async function createBallastTables(dynamodb: DynamoDBClient, prefix: string): Promise<{ state: string; control: string }> {
  const state = `${prefix}-state`;
  const control = `${prefix}-control`;
  await dynamodb.send(new CreateTableCommand({
    TableName: state,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: STATE_TABLE.partitionKey, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: STATE_TABLE.partitionKey, KeyType: 'HASH' }],
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
  }));
  await dynamodb.send(new CreateTableCommand({
    TableName: control,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [{ AttributeName: CONTROL_TABLE.partitionKey, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: CONTROL_TABLE.partitionKey, KeyType: 'HASH' }],
  }));
  await dynamodb.send(new UpdateTimeToLiveCommand({
    TableName: control,
    TimeToLiveSpecification: { AttributeName: CONTROL_TABLE.ttlAttribute, Enabled: true },
  }));
  return { state, control };
}
