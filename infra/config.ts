import { Duration, RemovalPolicy } from 'aws-cdk-lib';

/** The environments `cdk deploy -c env=<name>` accepts. `local` is what `npm start` runs. */
export const ENVIRONMENT_NAMES = ['local', 'dev', 'staging', 'prod'] as const;
export type EnvironmentName = (typeof ENVIRONMENT_NAMES)[number];

/** Everything that differs between environments, in one typed place. */
export interface EnvironmentConfig {
  readonly name: EnvironmentName;
  /** Applied to stateful resources (tables). prod retains them. */
  readonly removalPolicy: RemovalPolicy;
  /** DynamoDB deletion protection; on in prod. */
  readonly deletionProtection: boolean;
  /** How long an idempotency record is kept after completion. */
  readonly idempotencyRetention: Duration;
}

const CONFIGS: Record<EnvironmentName, EnvironmentConfig> = {
  local: { name: 'local', removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false, idempotencyRetention: Duration.days(30) },
  dev: { name: 'dev', removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false, idempotencyRetention: Duration.days(30) },
  staging: { name: 'staging', removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false, idempotencyRetention: Duration.days(30) },
  prod: { name: 'prod', removalPolicy: RemovalPolicy.RETAIN, deletionProtection: true, idempotencyRetention: Duration.days(30) },
};

/** The config for `-c env=<name>`; refuses unknown names with the list of valid ones. */
export function environmentConfig(name: unknown): EnvironmentConfig {
  if (typeof name !== 'string' || !(ENVIRONMENT_NAMES as readonly string[]).includes(name)) {
    throw new Error(`Unknown environment '${String(name)}': pass -c env=<${ENVIRONMENT_NAMES.join('|')}>.`);
  }
  return CONFIGS[name as EnvironmentName];
}
