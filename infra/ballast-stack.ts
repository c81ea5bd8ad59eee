import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { EnvironmentConfig } from './config.ts';
import { BallastTables } from './constructs/tables.ts';

export interface BallastStackProps extends StackProps {
  readonly config: EnvironmentConfig;
}

/** The whole of ballast in one stack per environment. */
export class BallastStack extends Stack {
  readonly tables: BallastTables;

  constructor(scope: Construct, id: string, props: BallastStackProps) {
    super(scope, id, props);
    this.tables = new BallastTables(this, 'Tables', {
      removalPolicy: props.config.removalPolicy,
      deletionProtection: props.config.deletionProtection,
    });
  }
}
