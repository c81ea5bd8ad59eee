import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  CreateTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand, type DynamoDBClient, type CreateTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_REGION } from '../engines/index.ts';
import type { SynthesizedStack } from './assembly.ts';
import { localUuid, resolve, type ResolutionContext } from './intrinsics.ts';
import { readStackIam, type StackIam } from '../iam/template.ts';
import { customTrafficRouting, predefinedTrafficRouting, type TrafficRouting } from '../codedeploy/traffic.ts';

export const LOCAL_ACCOUNT = '000000000000';

export interface LocalQueue { readonly logicalId: string; readonly name: string; readonly url: string; readonly arn: string; readonly fifo: boolean }
export interface LocalTable { readonly logicalId: string; readonly name: string; readonly arn: string; readonly streamArn?: string }
export interface LocalFunction {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** Bundled entry file and exported handler. */
  readonly file: string;
  readonly exportName: string;
  readonly timeoutMs: number;
  readonly memoryLimitInMB: number;
  readonly environment: Record<string, string>;
  /** Its aliases' names (e.g. `live`): its invocations are counted under `<name>:<alias>` too. */
  readonly aliases: readonly string[];
}
export interface LocalMapping {
  readonly logicalId: string;
  /** What `Ref` of the mapping returns: its UUID, the `EventSourceMappingUUID` of its metrics. */
  readonly uuid: string;
  readonly functionName: string;
  readonly eventSourceArn: string;
  readonly properties: Record<string, unknown>;
}
export interface LocalUrl { readonly logicalId: string; readonly functionName: string; readonly port: number; readonly url: string }
/** A CodeDeploy pre-traffic hook on an alias: what a deployment runs before shifting traffic. */
export interface LocalTrafficHook { readonly aliasLogicalId: string; readonly functionName: string; readonly hookFunctionName: string }

/**
 * A CodeDeploy deployment group on a Lambda alias (the alias's `CodeDeployLambdaAliasUpdate`
 * update policy and the group it names): what a stack update that changes the alias's version runs.
 */
export interface LocalDeploymentGroup {
  readonly logicalId: string;
  /** What a hook's `codedeploy:PutLifecycleEventHookExecutionStatus` is authorized on (`deploymentgroup:<application>/<group>`). */
  readonly arn: string;
  /** The function whose alias it deploys, and the alias. */
  readonly functionName: string;
  readonly aliasName: string;
  /** `DeploymentConfigName`, or the custom config's logical id. */
  readonly configName: string;
  readonly routing: TrafficRouting;
  /** Names of the alarms that stop the deployment (empty when `AlarmConfiguration` is off). */
  readonly alarms: readonly string[];
  /** `AutoRollbackConfiguration.Events` when enabled: `DEPLOYMENT_FAILURE`, `DEPLOYMENT_STOP_ON_ALARM`, `DEPLOYMENT_STOP_ON_REQUEST`. */
  readonly autoRollbackEvents: readonly string[];
  readonly beforeAllowTrafficHook?: string;
  readonly afterAllowTrafficHook?: string;
}

/** Everything the local cloud created from one stack's template. */
export interface LocalResources {
  readonly stackName: string;
  readonly queues: LocalQueue[];
  readonly tables: LocalTable[];
  readonly functions: LocalFunction[];
  readonly mappings: LocalMapping[];
  readonly urls: LocalUrl[];
  readonly preTrafficHooks: LocalTrafficHook[];
  /** The template's CodeDeploy deployment groups of Lambda aliases. */
  readonly deploymentGroups: LocalDeploymentGroup[];
  /**
   * The template's CloudWatch alarms, their metric properties resolved to local names, with the
   * topics they notify. Evaluated by the local cloud against its metrics.
   */
  readonly alarms: LocalAlarmResource[];
  /** The template's CloudWatch dashboards, their bodies resolved to local names (what the local console draws). */
  readonly dashboards: LocalDashboard[];
  /** The template's access control: what the local cloud authorizes every call against. */
  readonly iam: StackIam;
  /** Resource types in the template that have no local counterpart (VPC, log groups, ...). */
  readonly ignoredTypes: string[];
  /** Stack outputs, resolved to local values where they can be. */
  readonly outputs: Record<string, string>;
}

/** An alarm of the template: its resolved metric properties, or why they could not be resolved locally. */
export type LocalAlarmResource =
  | {
    readonly logicalId: string;
    readonly arn: string;
    /** The topics each state's notifications go to (`AlarmActions`, `OKActions`, `InsufficientDataActions`). */
    readonly actions: Readonly<Record<'ALARM' | 'OK' | 'INSUFFICIENT_DATA', readonly string[]>>;
    readonly properties: Readonly<Record<string, unknown>>;
  }
  | { readonly logicalId: string; readonly unresolved: string };

/** A dashboard of the template: its parsed body (`widgets`, ...), or why it could not be resolved locally. */
export type LocalDashboard =
  | { readonly logicalId: string; readonly name: string; readonly body: Readonly<Record<string, unknown>> }
  | { readonly logicalId: string; readonly name: string; readonly unresolved: string };

export interface ProvisionOptions {
  readonly stack: SynthesizedStack;
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly sqsEndpoint: string;
  readonly redisPort: number;
  /** A free port per Function URL, in template order. */
  readonly urlPorts: () => Promise<number>;
  /**
   * The version number the template's `AWS::Lambda::Version` resolves to: 1 for the stack as it
   * starts, the next number for an update's template (its alarms then watch that version).
   * @default '1'
   */
  readonly version?: string;
  /** Create nothing: resolve the template against resources that exist already (a stack update). @default false */
  readonly resolveOnly?: boolean;
}

/**
 * Variables the local cloud changes after resolving a function's environment: what is not
 * emulated is TLS, cluster mode and IAM auth of ElastiCache Serverless — the local redis-server is
 * a plain, single node without users.
 */
function localOverrides(environment: Record<string, string>, redisPort: number): Record<string, string> {
  const out = { ...environment };
  for (const [key, value] of Object.entries(out)) {
    if (value.startsWith(`rediss://127.0.0.1:${redisPort}`)) out[key] = value.replace('rediss://', 'redis://');
  }
  if ('BALLAST_CACHE_CLUSTER' in out) out.BALLAST_CACHE_CLUSTER = 'false';
  // ElastiCache's IAM auth has no local counterpart: the local redis-server has only its
  // passwordless default user, and a token signed with local credentials would mean nothing to it.
  if ('BALLAST_CACHE_AUTH' in out) out.BALLAST_CACHE_AUTH = 'none';
  return out;
}

/** Creates the stack's queues, tables, functions, mappings and URLs locally, from its template alone. */
export async function provision(options: ProvisionOptions): Promise<LocalResources> {
  const { stack } = options;
  const resources = Object.entries(stack.template.Resources);
  const refs = new Map<string, unknown>();
  const attributes = new Map<string, Record<string, unknown>>();
  const context: ResolutionContext = { stackName: stack.stackName, accountId: LOCAL_ACCOUNT, refs, attributes };
  const arn = (service: string, resource: string) => `arn:aws:${service}:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${resource}`;
  const of = (type: string | string[]) => resources.filter(([, r]) => (Array.isArray(type) ? type : [type]).includes(r.Type));
  const props = (r: { Properties?: Record<string, unknown> }) => r.Properties ?? {};
  const handled = new Set<string>();

  // Names and ARNs first, so any resource may reference any other.
  for (const [id, r] of of('AWS::SQS::Queue')) {
    const p = props(r);
    const fifo = p.FifoQueue === true || p.FifoQueue === 'true';
    // A name may be an expression (e.g. ending in part of the stack id); pseudo parameters resolve already.
    const name = p.QueueName !== undefined ? String(resolve(p.QueueName, context)) : `${stack.stackName}-${id}${fifo ? '.fifo' : ''}`;
    const url = `${options.sqsEndpoint}/${LOCAL_ACCOUNT}/${name}`;
    refs.set(id, url);
    attributes.set(id, { Arn: arn('sqs', name), QueueName: name, QueueUrl: url });
  }
  for (const [id, r] of of(['AWS::DynamoDB::GlobalTable', 'AWS::DynamoDB::Table'])) {
    const p = props(r);
    const name = typeof p.TableName === 'string' ? p.TableName : `${stack.stackName}-${id}`;
    refs.set(id, name);
    attributes.set(id, { Arn: arn('dynamodb', `table/${name}`) });
  }
  for (const [id] of of('AWS::ElastiCache::ServerlessCache')) {
    refs.set(id, id);
    attributes.set(id, { 'Endpoint.Address': '127.0.0.1', 'Endpoint.Port': String(options.redisPort) });
  }
  for (const [id, r] of of('AWS::Lambda::Function')) {
    const p = props(r);
    const name = typeof p.FunctionName === 'string' ? p.FunctionName : `${stack.stackName}-${id}`;
    refs.set(id, name);
    attributes.set(id, { Arn: arn('lambda', `function:${name}`) });
  }
  const version = options.version ?? '1';
  for (const [id, r] of of('AWS::Lambda::Version')) {
    const name = String(resolve(props(r).FunctionName, context));
    refs.set(id, arn('lambda', `function:${name}:${version}`));
    attributes.set(id, { Version: version });
  }
  for (const [id, r] of of('AWS::CloudWatch::Alarm')) {
    const name = props(r).AlarmName;
    refs.set(id, name === undefined ? id : String(resolve(name, context)));
  }
  for (const [id] of of(['AWS::CodeDeploy::Application', 'AWS::CodeDeploy::DeploymentGroup', 'AWS::CodeDeploy::DeploymentConfig'])) refs.set(id, id);
  // What access control names: roles, topics, and the network a function runs in (see `readStackIam`).
  for (const [id] of of('AWS::IAM::Role')) {
    refs.set(id, `${stack.stackName}-${id}`);
    attributes.set(id, { Arn: `arn:aws:iam::${LOCAL_ACCOUNT}:role/${stack.stackName}-${id}` });
  }
  for (const [id, r] of of('AWS::SNS::Topic')) {
    const name = props(r).TopicName === undefined ? `${stack.stackName}-${id}` : String(resolve(props(r).TopicName, context));
    refs.set(id, arn('sns', name));
    attributes.set(id, { TopicArn: arn('sns', name), TopicName: name });
  }
  for (const [id] of of(['AWS::EC2::VPC', 'AWS::EC2::Subnet'])) refs.set(id, `local-${id}`);
  // AWS generates a mapping's UUID; locally it follows from the stack and the logical id.
  for (const [id] of of('AWS::Lambda::EventSourceMapping')) refs.set(id, localUuid(`${stack.stackName}/${id}`));
  const preTrafficHooks: LocalTrafficHook[] = [];
  const deploymentGroups: LocalDeploymentGroup[] = [];
  const aliases = new Map<string, string[]>();
  for (const [id, r] of of('AWS::Lambda::Alias')) {
    const p = props(r);
    const functionName = String(resolve(p.FunctionName, context));
    aliases.set(functionName, [...(aliases.get(functionName) ?? []), String(p.Name)]);
    refs.set(id, arn('lambda', `function:${functionName}:${String(p.Name)}`));
    const update = r.UpdatePolicy?.CodeDeployLambdaAliasUpdate as Record<string, unknown> | undefined;
    if (!update) continue;
    const hook = (key: string) => (update[key] === undefined ? undefined : functionNameOf(resolve(update[key], context)));
    const before = hook('BeforeAllowTrafficHook');
    if (before) preTrafficHooks.push({ aliasLogicalId: id, functionName, hookFunctionName: before });
    const groupId = String(resolve(update.DeploymentGroupName, context));
    const group = stack.template.Resources[groupId];
    if (group?.Type !== 'AWS::CodeDeploy::DeploymentGroup') throw new Error(`alias ${id}: its update policy names deployment group ${groupId}, which the template does not define`);
    const { DeploymentConfigName, AlarmConfiguration, AutoRollbackConfiguration, ApplicationName } = props(group);
    const deciding = resolve({ DeploymentConfigName, AlarmConfiguration, AutoRollbackConfiguration, ApplicationName }, context) as Record<string, unknown>;
    deploymentGroups.push(deploymentGroup(groupId, deciding, stack.template.Resources, context, {
      functionName, aliasName: String(p.Name), before, after: hook('AfterAllowTrafficHook'),
    }));
  }
  const urls: LocalUrl[] = [];
  for (const [id, r] of of('AWS::Lambda::Url')) {
    const port = await options.urlPorts();
    const url = `http://127.0.0.1:${port}/`;
    attributes.set(id, { FunctionUrl: url });
    urls.push({ logicalId: id, functionName: functionNameOf(resolve(props(r).TargetFunctionArn, context)), port, url });
  }

  // Tables (their stream ARNs only exist once created), then queues, DLQs before their sources.
  const tables: LocalTable[] = [];
  for (const [id, r] of of(['AWS::DynamoDB::GlobalTable', 'AWS::DynamoDB::Table'])) {
    handled.add(r.Type);
    const p = resolve(props(r), context) as Record<string, unknown>;
    const name = refs.get(id) as string;
    const stream = p.StreamSpecification as { StreamViewType?: string } | undefined;
    const input: CreateTableCommandInput = {
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: p.KeySchema as CreateTableCommandInput['KeySchema'],
      AttributeDefinitions: p.AttributeDefinitions as CreateTableCommandInput['AttributeDefinitions'],
      ...(p.GlobalSecondaryIndexes ? { GlobalSecondaryIndexes: (p.GlobalSecondaryIndexes as Record<string, unknown>[])
        .map(({ IndexName, KeySchema, Projection }) => ({ IndexName, KeySchema, Projection })) as CreateTableCommandInput['GlobalSecondaryIndexes'] } : {}),
      ...(stream?.StreamViewType ? { StreamSpecification: { StreamEnabled: true, StreamViewType: stream.StreamViewType as 'NEW_AND_OLD_IMAGES' } } : {}),
    };
    // A second cloud on the same engines (a restart) finds its tables already there, data intact.
    if (!options.resolveOnly) {
      await options.dynamodb.send(new CreateTableCommand(input)).catch((error: unknown) => {
        if ((error as Error).name !== 'ResourceInUseException') throw error;
      });
    }
    const ttl = p.TimeToLiveSpecification as { AttributeName?: string; Enabled?: boolean } | undefined;
    if (ttl?.Enabled && ttl.AttributeName && !options.resolveOnly) {
      await options.dynamodb.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { AttributeName: ttl.AttributeName, Enabled: true } }))
        .catch((error: unknown) => {
          if (!/already enabled/i.test((error as Error).message)) throw error;
        });
    }
    const described = await options.dynamodb.send(new DescribeTableCommand({ TableName: name }));
    const streamArn = described.Table?.LatestStreamArn;
    if (streamArn) attributes.set(id, { ...attributes.get(id), StreamArn: streamArn });
    tables.push({ logicalId: id, name, arn: String(attributes.get(id)?.Arn), ...(streamArn ? { streamArn } : {}) });
  }

  const queueEntries = of('AWS::SQS::Queue').sort(([, a], [, b]) => Number(Boolean(props(a).RedrivePolicy)) - Number(Boolean(props(b).RedrivePolicy)));
  const queues: LocalQueue[] = [];
  for (const [id, r] of queueEntries) {
    handled.add(r.Type);
    const p = resolve(props(r), context) as Record<string, unknown>;
    const attrs = attributes.get(id) as { QueueName: string; QueueUrl: string; Arn: string };
    const fifo = attrs.QueueName.endsWith('.fifo');
    const queueAttributes: Record<string, string> = {};
    for (const key of ['VisibilityTimeout', 'MessageRetentionPeriod', 'DelaySeconds', 'ReceiveMessageWaitTimeSeconds', 'MaximumMessageSize', 'ContentBasedDeduplication']) {
      if (p[key] !== undefined) queueAttributes[key] = String(p[key]);
    }
    if (fifo) queueAttributes.FifoQueue = 'true';
    if (p.RedrivePolicy) queueAttributes.RedrivePolicy = JSON.stringify(p.RedrivePolicy);
    if (!options.resolveOnly) await options.sqs.send(new CreateQueueCommand({ QueueName: attrs.QueueName, Attributes: queueAttributes }));
    queues.push({ logicalId: id, name: attrs.QueueName, url: attrs.QueueUrl, arn: attrs.Arn, fifo });
  }

  const functions: LocalFunction[] = [];
  for (const [id, r] of of('AWS::Lambda::Function')) {
    handled.add(r.Type);
    const p = props(r);
    const assetPath = r.Metadata?.['aws:asset:path'];
    if (typeof assetPath !== 'string') throw new Error(`${id}: no bundled asset (aws:asset:path); inline or image code is not supported locally`);
    const [module, exportName] = String(p.Handler ?? 'index.handler').split(/\.(?=[^.]+$)/) as [string, string];
    const dir = join(stack.assemblyDir, assetPath);
    const file = ['.mjs', '.js', '.cjs'].map((ext) => join(dir, `${module}${ext}`)).find((candidate) => existsSync(candidate));
    if (!file) throw new Error(`${id}: handler file ${module}.{mjs,js} not found in ${dir}`);
    const variables = resolve((p.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {}, context) as Record<string, unknown>;
    const environment = localOverrides(Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, String(v)])), options.redisPort);
    functions.push({
      logicalId: id, name: refs.get(id) as string, arn: String(attributes.get(id)?.Arn), file, exportName,
      timeoutMs: Number(p.Timeout ?? 3) * 1000, memoryLimitInMB: Number(p.MemorySize ?? 128), environment,
      aliases: aliases.get(refs.get(id) as string) ?? [],
    });
  }

  const mappings: LocalMapping[] = of('AWS::Lambda::EventSourceMapping').map(([id, r]) => {
    handled.add(r.Type);
    const p = resolve(props(r), context) as Record<string, unknown>;
    return { logicalId: id, uuid: refs.get(id) as string, functionName: functionNameOf(p.FunctionName), eventSourceArn: String(p.EventSourceArn), properties: p };
  });
  for (const type of [
    'AWS::Lambda::Version', 'AWS::Lambda::Alias', 'AWS::Lambda::Url', 'AWS::ElastiCache::ServerlessCache',
    'AWS::CodeDeploy::Application', 'AWS::CodeDeploy::DeploymentGroup', 'AWS::CodeDeploy::DeploymentConfig',
  ]) handled.add(type);

  const alarms: LocalAlarmResource[] = of('AWS::CloudWatch::Alarm').map(([id, r]) => {
    handled.add(r.Type);
    // What a dashboard's alarm widget (and anything else) references: the alarm's name and ARN.
    const alarmName = props(r).AlarmName === undefined ? id : String(resolve(props(r).AlarmName, context));
    refs.set(id, alarmName);
    attributes.set(id, { Arn: arn('cloudwatch', `alarm:${alarmName}`) });
    const { AlarmActions, OKActions, InsufficientDataActions, ...metricProps } = props(r);
    const targets = (list: unknown) => (list === undefined ? [] : (resolve(list, context) as unknown[]).map(String));
    try {
      const actions = { ALARM: targets(AlarmActions), OK: targets(OKActions), INSUFFICIENT_DATA: targets(InsufficientDataActions) };
      return { logicalId: id, arn: arn('cloudwatch', `alarm:${alarmName}`), actions, properties: resolve(metricProps, context) as Record<string, unknown> };
    } catch (error) {
      return { logicalId: id, unresolved: (error as Error).message };
    }
  });

  const dashboards: LocalDashboard[] = of('AWS::CloudWatch::Dashboard').map(([id, r]) => {
    handled.add(r.Type);
    const p = props(r);
    const name = p.DashboardName === undefined ? `${stack.stackName}-${id}` : String(resolve(p.DashboardName, context));
    try {
      return { logicalId: id, name, body: JSON.parse(String(resolve(p.DashboardBody, context))) as Record<string, unknown> };
    } catch (error) {
      return { logicalId: id, name, unresolved: (error as Error).message };
    }
  });

  const outputs: Record<string, string> = {};
  for (const [name, output] of Object.entries(stack.template.Outputs ?? {})) {
    try {
      outputs[name] = localOverrides({ value: String(resolve(output.Value, context)) }, options.redisPort).value as string;
    } catch {
      // An output about something not emulated (e.g. an SNS topic) has no local value.
    }
  }
  const iam = readStackIam(stack.template.Resources, context);
  for (const type of ['AWS::IAM::Role', 'AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy', 'AWS::SQS::QueuePolicy', 'AWS::SNS::Topic', 'AWS::SNS::TopicPolicy', 'AWS::SNS::Subscription', 'AWS::Lambda::Permission', 'AWS::EC2::VPCEndpoint']) handled.add(type);
  const ignoredTypes = [...new Set(resources.map(([, r]) => r.Type).filter((type) => !handled.has(type)))].sort();
  return { stackName: stack.stackName, queues, tables, functions, mappings, urls, preTrafficHooks, deploymentGroups, alarms, dashboards, iam, ignoredTypes, outputs };
}

/** A deployment group's resolved properties, with its config (predefined, or a custom resource of the template). */
function deploymentGroup(
  logicalId: string, p: Record<string, unknown>, resources: SynthesizedStack['template']['Resources'], context: ResolutionContext,
  alias: { functionName: string; aliasName: string; before?: string; after?: string },
): LocalDeploymentGroup {
  const configName = String(p.DeploymentConfigName ?? 'CodeDeployDefault.LambdaCanary10Percent5Minutes');
  const custom = resources[configName];
  const routing = custom?.Type === 'AWS::CodeDeploy::DeploymentConfig'
    ? customTrafficRouting(resolve(custom.Properties ?? {}, context) as Record<string, unknown>, configName)
    : predefinedTrafficRouting(configName);
  const alarmConfig = p.AlarmConfiguration as { Enabled?: boolean; Alarms?: { Name?: unknown }[] } | undefined;
  const rollback = p.AutoRollbackConfiguration as { Enabled?: boolean; Events?: string[] } | undefined;
  return {
    logicalId, functionName: alias.functionName, aliasName: alias.aliasName, configName, routing,
    arn: `arn:aws:codedeploy:${LOCAL_REGION}:${context.accountId}:deploymentgroup:${String(p.ApplicationName)}/${logicalId}`,
    alarms: alarmConfig?.Enabled === false ? [] : (alarmConfig?.Alarms ?? []).map((alarm) => String(alarm.Name)),
    autoRollbackEvents: rollback?.Enabled ? [...(rollback.Events ?? [])] : [],
    ...(alias.before ? { beforeAllowTrafficHook: alias.before } : {}),
    ...(alias.after ? { afterAllowTrafficHook: alias.after } : {}),
  };
}

/** `name`, `name:qualifier` or a function/alias ARN → the function name. */
export function functionNameOf(reference: unknown): string {
  const text = String(reference);
  if (text.startsWith('arn:')) return text.split(':')[6] ?? text;
  return text.split(':')[0] ?? text;
}
