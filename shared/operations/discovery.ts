import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { localCloudFile, readLocalCloudFile } from '../discovery/index.ts';
import { StackUnreachableError } from './errors.ts';

/** The outputs every command may need (see infra/ballast-stack.ts). */
export const STACK_OUTPUTS = [
  'JobsQueueUrl', 'JobsDeadLetterQueueUrl', 'StateTableName', 'ControlTableName', 'WorkerFunctionName', 'InvalidatorFailureQueueUrl',
] as const;
export type StackOutputName = (typeof STACK_OUTPUTS)[number];

/** A resolved ballast stack: where its resources are, found the way any tool finds a stack. */
export interface StackTarget {
  /** `local`, `dev`, `staging`, `prod`, ... */
  readonly env: string;
  readonly stackName: string;
  /** Alarms of this environment are named `<alarmPrefix>...`. */
  readonly alarmPrefix: string;
  readonly outputs: Readonly<Record<StackOutputName, string>> & Readonly<Record<string, string | undefined>>;
  /** Where the outputs came from. */
  readonly source: 'local-file' | 'cloudformation';
  /** ElastiCache Serverless is cluster mode; the local redis-server is not. */
  readonly cacheCluster: boolean;
}

export interface ResolveStackOptions {
  readonly env: string;
  /** The deployed stack's name (a team's app names its own). @default `ballast-<env>` */
  readonly stackName?: string;
  /** @default - `BALLAST_LOCAL_FILE` or `.ballast/local.json` */
  readonly localFile?: string;
}

/**
 * Resolves the stack of an environment. `local`: the description `npm start` writes, whose
 * `AWS_ENDPOINT_URL_*` variables and dummy credentials are applied to this process so every SDK
 * client reaches the local engines through its normal endpoint resolution. Any other env:
 * CloudFormation DescribeStacks of `stackName` (default `ballast-<env>`), with the SDK's normal credential and region
 * resolution (AWS_PROFILE, AWS_REGION, SSO, instance roles...).
 *
 * @throws StackUnreachableError when the stack or one of its outputs cannot be found
 */
export async function resolveStack(options: ResolveStackOptions): Promise<StackTarget> {
  const env = options.env;
  if (!/^[a-z][a-z0-9-]{0,30}$/.test(env)) throw new StackUnreachableError(`--env must look like 'local', 'dev' or 'prod', got '${env}'`);
  if (env === 'local') {
    let description;
    try {
      description = readLocalCloudFile(options.localFile ?? localCloudFile());
    } catch (error) {
      throw new StackUnreachableError((error as Error).message, { cause: error });
    }
    Object.assign(process.env, description.environment);
    return target(env, description.stackName, description.outputs, 'local-file', false);
  }
  const stackName = options.stackName ?? `ballast-${env}`;
  const cloudformation = new CloudFormationClient({});
  try {
    const out = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
    const stack = out.Stacks?.[0];
    if (!stack) throw new StackUnreachableError(`stack ${stackName} not found`);
    const outputs = Object.fromEntries((stack.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']));
    return target(env, stackName, outputs, 'cloudformation', true);
  } catch (error) {
    if (error instanceof StackUnreachableError) throw error;
    throw new StackUnreachableError(
      `cannot describe stack ${stackName} (${(error as Error).name}: ${(error as Error).message}): is it deployed (npx cdk deploy -c env=${env}) and are AWS credentials and region set?`,
      { cause: error },
    );
  } finally {
    cloudformation.destroy();
  }
}

function target(env: string, stackName: string, outputs: Record<string, string>, source: StackTarget['source'], cacheCluster: boolean): StackTarget {
  const missing = STACK_OUTPUTS.filter((name) => !outputs[name]);
  if (missing.length > 0) throw new StackUnreachableError(`stack ${stackName} has no output ${missing.join(', ')}: is it a ballast stack of this version?`);
  return { env, stackName, alarmPrefix: `ballast-${env}`, outputs: outputs as StackTarget['outputs'], source, cacheCluster };
}
