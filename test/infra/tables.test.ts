import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { ENVIRONMENT_NAMES, environmentConfig } from '../../infra/config.ts';
import { synthStack } from '../helpers/infra.ts';

const synth = (env: string): Template => synthStack(env).template;

describe('BallastTables', () => {
  for (const env of ENVIRONMENT_NAMES) {
    it(`${env}: state table streams new and old images with PITR; control table has TTL`, () => {
      const template = synth(env);
      template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
        BillingMode: 'PAY_PER_REQUEST',
        Replicas: [Match.objectLike({ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } })],
      });
      template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
        TimeToLiveSpecification: { AttributeName: 'expiresAtEpochSeconds', Enabled: true },
      });
    });
  }

  it('prod retains tables with deletion protection; dev does not', () => {
    // GIVEN/WHEN both environments are synthesized
    const prodTables = synth('prod').findResources('AWS::DynamoDB::GlobalTable');
    const devTables = synth('dev').findResources('AWS::DynamoDB::GlobalTable');
    // THEN
    for (const table of Object.values(prodTables)) {
      assert.equal(table.DeletionPolicy, 'Retain');
      assert.equal(table.Properties.Replicas[0].DeletionProtectionEnabled, true);
    }
    for (const table of Object.values(devTables)) {
      assert.equal(table.DeletionPolicy, 'Delete');
      assert.equal(table.Properties.Replicas[0].DeletionProtectionEnabled, false);
    }
  });

  it('an unknown environment is refused with the valid names', () => {
    assert.throws(() => environmentConfig('qa'), /Unknown environment 'qa': pass -c env=<local\|dev\|staging\|prod>/);
  });
});
