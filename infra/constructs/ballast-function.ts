import { Construct } from 'constructs';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { join } from 'node:path';
import { FUNCTION_TIMEOUT_ENV } from '../../shared/aws/index.ts';
import { codeVersion } from '../code-version.ts';
import { tracingEnvironment, type FunctionTracing } from './tracing.ts';
import { LAZY_BUILTIN_ALIASES } from './bundling/lazy-builtins.ts';
import { findProjectRoot, frameworkModule, FROM_SOURCES } from './function-entry.ts';

/**
 * What Lambda does with a function's execution role to attach it to a VPC: create, describe and
 * delete its ENIs and move their private IPs (the EC2 half of AWSLambdaVPCAccessExecutionRole,
 * without that policy's `logs:*` on every log group). EC2 supports no resource-level permissions
 * for the Describe actions, and Lambda's documentation asks for `*` on the others.
 */
export const VPC_NETWORK_INTERFACE_ACTIONS = [
  'ec2:CreateNetworkInterface', 'ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets', 'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses',
] as const;

export interface BallastFunctionProps {
  /** The function's name in ballast, e.g. `'read-api'`: its default service name and entry. */
  readonly functionName: string;
  /**
   * The file exporting its `handler`.
   * @default - ballast's own `functions/<functionName>/index` (functions that take no registry)
   */
  readonly entry?: string;
  /**
   * The project whose `package-lock.json` pins what gets bundled.
   * @default - the nearest directory at or above the working directory with a `package-lock.json`
   */
  readonly projectRoot?: string;
  /** @default Duration.seconds(30) */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /**
   * Variables over the ones every function gets: `NODE_OPTIONS`, its timeout, and `WORKER_VERSION`
   * (the version on its logs and metrics).
   * @default {}
   */
  readonly environment?: Record<string, string>;
  /**
   * The version stamped on its logs and metrics (`WORKER_VERSION`), when `environment` sets none.
   * @default - codeVersion(functionName): package version + hash of what its bundle contains
   */
  readonly codeVersion?: string;
  /** @default - not in a VPC */
  readonly vpc?: IVpc;
  /** @default - the VPC's private subnets */
  readonly vpcSubnets?: SubnetSelection;
  /** @default - none */
  readonly securityGroups?: ISecurityGroup[];
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /** @default RemovalPolicy.DESTROY */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * OpenTelemetry through the AWS Lambda Layer for OpenTelemetry: the layer, and the environment
   * it reads ({@link tracingEnvironment}) with `OTEL_SERVICE_NAME` = the function's
   * `POWERTOOLS_SERVICE_NAME`, else `ballast-<functionName>`.
   * @default - not traced by OpenTelemetry (X-Ray active tracing records Lambda's own segments)
   */
  readonly tracing?: FunctionTracing;
}

/**
 * Every ballast function is built the same way: Node.js 24 on arm64, bundled by the local esbuild
 * (never Docker) as minified ESM with source maps, the AWS SDK bundled in (pinned by the lock file,
 * not whatever the runtime ships), X-Ray active tracing, JSON logs in a log group with a retention;
 * with `tracing`, the OpenTelemetry layer, whose spans reach X-Ray through the daemon that active
 * tracing runs (the bundle carries only `@opentelemetry/api`).
 * The execution role writes only to that log group (no account-wide `AWSLambdaBasicExecutionRole`);
 * functions in a VPC get the ENI actions Lambda needs ({@link VPC_NETWORK_INTERFACE_ACTIONS}) and
 * not `AWSLambdaVPCAccessExecutionRole`, whose `logs:*` statement covers every log group.
 */
export class BallastFunction extends NodejsFunction {
  /** The execution role; grants on the function land in its default policy. */
  readonly executionRole: Role;

  constructor(scope: Construct, id: string, props: BallastFunctionProps) {
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.DESTROY,
    });
    const role = new Role(scope, `${id}ServiceRole`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    if (props.vpc) role.addToPrincipalPolicy(new PolicyStatement({ actions: [...VPC_NETWORK_INTERFACE_ACTIONS], resources: ['*'] }));
    const timeout = props.timeout ?? Duration.seconds(30);
    const serviceName = props.environment?.POWERTOOLS_SERVICE_NAME ?? `ballast-${props.functionName}`;
    const entry = props.entry ?? frameworkModule(`functions/${props.functionName}/index`);
    const projectRoot = props.projectRoot ?? findProjectRoot(process.cwd());
    super(scope, id, {
      entry,
      handler: 'handler',
      projectRoot,
      depsLockFilePath: join(projectRoot, 'package-lock.json'),
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      timeout,
      memorySize: props.memorySize ?? 512,
      // Also what carries the OpenTelemetry layer's spans: it exports them over UDP to the X-Ray
      // daemon Lambda runs only with active tracing, and parents the invocation on Lambda's segment.
      tracing: Tracing.ACTIVE,
      layers: props.tracing ? [props.tracing.layer] : undefined,
      loggingFormat: LoggingFormat.JSON,
      logGroup,
      role,
      // The function's own timeout, from which its SDK clients derive theirs (shared/aws).
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        [FUNCTION_TIMEOUT_ENV]: String(timeout.toMilliseconds()),
        ...(props.environment?.WORKER_VERSION ? {} : { WORKER_VERSION: props.codeVersion ?? codeVersion(entry, projectRoot) }),
        ...props.environment,
        ...(props.tracing ? tracingEnvironment(serviceName, props.tracing.samplingRatio) : {}),
      },
      vpc: props.vpc,
      vpcSubnets: props.vpc ? props.vpcSubnets : undefined,
      securityGroups: props.securityGroups,
      bundling: {
        forceDockerBundling: false,
        format: OutputFormat.ESM,
        target: 'node24',
        minify: true,
        sourceMap: true,
        // Stack traces need the map's positions and names, not the sources it would embed: without
        // them the map is a third of the size, and so is what `--enable-source-maps` parses at cold start.
        sourcesContent: false,
        externalModules: [],
        mainFields: ['module', 'main'],
        // CommonJS dependencies call require() on built-ins; give the ESM bundle one.
        banner: "import { createRequire as __ballastCreateRequire } from 'node:module'; const require = __ballastCreateRequire(import.meta.url);",
        // node:http and node:https taken as require() takes them, so undici is never loaded.
        // From its sources, ballast's own package name resolves to them too (the examples import it).
        esbuildArgs: {
          '--alias': Object.entries(LAZY_BUILTIN_ALIASES).map(([name, path]) => `${name}=${path}`),
          ...(FROM_SOURCES ? { '--conditions': 'ballast-source' } : {}),
        },
      },
    });
    this.executionRole = role;
  }
}
