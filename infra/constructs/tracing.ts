/**
 * OpenTelemetry on AWS: the functions carry only `@opentelemetry/api`; the SDK comes from the
 * AWS-maintained "AWS Lambda Layer for OpenTelemetry" for Node.js (`AWSOpenTelemetryDistroJs`, the
 * AWS Distro for OpenTelemetry JavaScript packaged for Lambda and used by CloudWatch Application
 * Signals). Its wrapper starts the SDK before the handler, and its exporter sends the sampled spans
 * over UDP to the X-Ray daemon that Lambda runs next to a function with active tracing.
 *
 * It replaces the legacy ADOT layer (`aws-otel-nodejs-<arch>-ver-*`, with an embedded collector),
 * whose documentation stops at Node.js 22; `AWSOpenTelemetryDistroJs` is published for
 * nodejs18.x–nodejs24.x on arm64 and x86_64 (aws-observability/aws-otel-js-instrumentation,
 * `.github/workflows/region-build-release.yml`), and its `otel-instrument` wrapper takes the ESM
 * path on Node.js 24.
 */
import { Annotations, CfnMapping, Token, type Stack } from 'aws-cdk-lib';
import { LayerVersion, type ILayerVersion } from 'aws-cdk-lib/aws-lambda';
import type { TracingConfig } from '../config.ts';
import { BallastConfigError } from './validation.ts';

/** The layer's name in every region (its publisher account differs by region). */
export const OTEL_LAYER_NAME = 'AWSOpenTelemetryDistroJs';

/** The wrapper script `AWSOpenTelemetryDistroJs` documents for `AWS_LAMBDA_EXEC_WRAPPER`. */
export const OTEL_EXEC_WRAPPER = '/opt/otel-instrument';

/**
 * The `AWSOpenTelemetryDistroJs` version ARN per region: the publisher account differs by region
 * and so does the version, so the ARN is looked up rather than built. Versions from the ADOT
 * documentation's layer table (aws-otel/aws-otel.github.io `src/config/lambdaLayerArns.js`); to move
 * to a newer one, check that its `CompatibleRuntimes` include nodejs24.x:
 * `aws lambda get-layer-version-by-arn --arn <arn> --query CompatibleRuntimes`.
 */
export const OTEL_LAYER_ARNS: Readonly<Record<string, string>> = {
  'af-south-1': 'arn:aws:lambda:af-south-1:904233096616:layer:AWSOpenTelemetryDistroJs:16',
  'ap-east-1': 'arn:aws:lambda:ap-east-1:888577020596:layer:AWSOpenTelemetryDistroJs:16',
  'ap-east-2': 'arn:aws:lambda:ap-east-2:412664885777:layer:AWSOpenTelemetryDistroJs:5',
  'ap-northeast-1': 'arn:aws:lambda:ap-northeast-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'ap-northeast-2': 'arn:aws:lambda:ap-northeast-2:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'ap-northeast-3': 'arn:aws:lambda:ap-northeast-3:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'ap-south-1': 'arn:aws:lambda:ap-south-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'ap-south-2': 'arn:aws:lambda:ap-south-2:796973505492:layer:AWSOpenTelemetryDistroJs:16',
  'ap-southeast-1': 'arn:aws:lambda:ap-southeast-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'ap-southeast-2': 'arn:aws:lambda:ap-southeast-2:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'ap-southeast-3': 'arn:aws:lambda:ap-southeast-3:039612877180:layer:AWSOpenTelemetryDistroJs:16',
  'ap-southeast-4': 'arn:aws:lambda:ap-southeast-4:713881805771:layer:AWSOpenTelemetryDistroJs:16',
  'ap-southeast-5': 'arn:aws:lambda:ap-southeast-5:152034782359:layer:AWSOpenTelemetryDistroJs:9',
  'ap-southeast-6': 'arn:aws:lambda:ap-southeast-6:313828097273:layer:AWSOpenTelemetryDistroJs:4',
  'ap-southeast-7': 'arn:aws:lambda:ap-southeast-7:980416031188:layer:AWSOpenTelemetryDistroJs:9',
  'ca-central-1': 'arn:aws:lambda:ca-central-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'ca-west-1': 'arn:aws:lambda:ca-west-1:595944127152:layer:AWSOpenTelemetryDistroJs:9',
  'cn-north-1': 'arn:aws-cn:lambda:cn-north-1:440179912924:layer:AWSOpenTelemetryDistroJs:9',
  'cn-northwest-1': 'arn:aws-cn:lambda:cn-northwest-1:440180067931:layer:AWSOpenTelemetryDistroJs:9',
  'eu-central-1': 'arn:aws:lambda:eu-central-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'eu-central-2': 'arn:aws:lambda:eu-central-2:156041407956:layer:AWSOpenTelemetryDistroJs:16',
  'eu-north-1': 'arn:aws:lambda:eu-north-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'eu-south-1': 'arn:aws:lambda:eu-south-1:257394471194:layer:AWSOpenTelemetryDistroJs:16',
  'eu-south-2': 'arn:aws:lambda:eu-south-2:490004653786:layer:AWSOpenTelemetryDistroJs:16',
  'eu-west-1': 'arn:aws:lambda:eu-west-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'eu-west-2': 'arn:aws:lambda:eu-west-2:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'eu-west-3': 'arn:aws:lambda:eu-west-3:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'il-central-1': 'arn:aws:lambda:il-central-1:746669239226:layer:AWSOpenTelemetryDistroJs:16',
  'me-central-1': 'arn:aws:lambda:me-central-1:739275441131:layer:AWSOpenTelemetryDistroJs:16',
  'mx-central-1': 'arn:aws:lambda:mx-central-1:610118373846:layer:AWSOpenTelemetryDistroJs:9',
  'sa-east-1': 'arn:aws:lambda:sa-east-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'us-east-1': 'arn:aws:lambda:us-east-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'us-east-2': 'arn:aws:lambda:us-east-2:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'us-west-1': 'arn:aws:lambda:us-west-1:615299751070:layer:AWSOpenTelemetryDistroJs:16',
  'us-west-2': 'arn:aws:lambda:us-west-2:615299751070:layer:AWSOpenTelemetryDistroJs:16',
};

/**
 * Regions where the layer is published but its latest version (me-south-1: 12) lags the releases
 * that support Node.js 24: no default, the synth asks for `-c otelLayerArn`. Value: the publisher account id.
 */
const UNPINNED_REGIONS: Readonly<Record<string, string>> = { 'me-south-1': '980921751758' };

/**
 * Extraction order of the propagators: OpenTelemetry's composite propagator lets the last one that
 * finds a context win, so `tracecontext` comes last and a W3C `traceparent` (what ballast
 * propagates) beats an `X-Amzn-Trace-Id` in the same headers; X-Ray's header still parents what
 * carries nothing else (an SQS record's `AWSTraceHeader`). Both are injected.
 */
export const OTEL_PROPAGATORS = 'xray,tracecontext';

/** What a {@link BallastFunction} needs to be traced: the stack's layer and its environment's ratio. */
export interface FunctionTracing {
  readonly layer: ILayerVersion;
  /** `OTEL_TRACES_SAMPLER_ARG`, between 0 and 1. */
  readonly samplingRatio: number;
}

/**
 * The environment the layer reads, for the function whose service name (`OTEL_SERVICE_NAME`) is
 * given. Besides the sampler and propagators:
 * - `OTEL_AWS_APPLICATION_SIGNALS_ENABLED=false`: traces to X-Ray only. The layer turns Application
 *   Signals on by default, which records every span regardless of the sampler and exports the
 *   unsampled ones too (Transaction Search, billed separately).
 * - `OTEL_AWS_LAMBDA_FAST_START=false`: not the layer's "lite" SDK, which ignores the sampler and
 *   drops span links (ballast links a batch to its records).
 * - `OTEL_NODE_ENABLED_INSTRUMENTATIONS=aws-sdk` with `OTEL_NODE_DISABLED_INSTRUMENTATIONS=http`:
 *   the layer's wrapper always appends `aws-lambda,http`; the disabled list wins, so the functions
 *   get the invocation span (aws-lambda, which also flushes the spans before Lambda freezes the
 *   environment) and one span per AWS SDK call, and not a second span under ballast's own
 *   `ballast.external` for every outgoing HTTP call.
 */
export function tracingEnvironment(serviceName: string, samplingRatio: number): Record<string, string> {
  return {
    AWS_LAMBDA_EXEC_WRAPPER: OTEL_EXEC_WRAPPER,
    OTEL_SERVICE_NAME: serviceName,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: String(samplingRatio),
    OTEL_PROPAGATORS,
    OTEL_AWS_APPLICATION_SIGNALS_ENABLED: 'false',
    OTEL_AWS_LAMBDA_FAST_START: 'false',
    OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'aws-sdk',
    OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'http',
  };
}

/**
 * The stack's tracing, checked: `undefined` when the environment has it off, otherwise the layer
 * (one reference per stack, shared by every function) and the sampling ratio. Refuses a ratio
 * outside [0, 1], and a layer ARN that is malformed, in another region, built for x86_64, or the
 * legacy ADOT layer; an unknown layer only draws a warning (its wrapper must be `/opt/otel-instrument`).
 * @example
 * const tracing = functionTracing(this, config.tracing);
 * new BallastFunction(this, 'ReadApi', { functionName: 'read-api', tracing });
 */
export function functionTracing(stack: Stack, config: TracingConfig): FunctionTracing | undefined {
  const ratio = config.samplingRatio;
  if (!(Number.isFinite(ratio) && ratio >= 0 && ratio <= 1)) {
    throw new BallastConfigError(stack, `tracing.samplingRatio must be between 0 and 1 (the share of new traces recorded, e.g. 0.05 `
      + `for 5 %), got ${ratio}: fix the environment's tracing.samplingRatio in infra/config.ts.`);
  }
  if (!config.enabled) return undefined;
  const arn = config.layerArn === undefined ? defaultLayerArn(stack) : checkedLayerArn(stack, config.layerArn);
  return { layer: LayerVersion.fromLayerVersionArn(stack, 'OtelLayer', arn), samplingRatio: ratio };
}

/** The layer for the stack's region; in an environment-agnostic stack, a lookup by `AWS::Region` at deploy. */
function defaultLayerArn(stack: Stack): string {
  const region = stack.region;
  if (Token.isUnresolved(region)) {
    const mapping = new CfnMapping(stack, 'OtelLayerArns', {
      mapping: Object.fromEntries(Object.entries(OTEL_LAYER_ARNS).map(([name, arn]) => [name, { arn }])),
    });
    return mapping.findInMap(region, 'arn');
  }
  const arn = OTEL_LAYER_ARNS[region];
  if (arn) return arn;
  const account = UNPINNED_REGIONS[region];
  const example = `arn:aws:lambda:${region}:${account ?? '<account>'}:layer:${OTEL_LAYER_NAME}:<version>`;
  throw new BallastConfigError(stack, account
    ? `no ${OTEL_LAYER_NAME} version known to support nodejs24.x in ${region}: deploy with -c otelLayerArn=${example} `
      + `(one whose CompatibleRuntimes include nodejs24.x: aws lambda get-layer-version-by-arn --arn <arn>), or turn tracing off in infra/config.ts.`
    : `${OTEL_LAYER_NAME} is not published in ${region} as far as ballast knows: deploy with -c otelLayerArn=${example} `
      + '(the AWS Lambda Layer for OpenTelemetry\'s ARN for that region), or turn tracing off in infra/config.ts.');
}

/** `arn:<partition>:lambda:<region>:<account>:layer:<name>:<version>` */
const LAYER_VERSION_ARN = /^arn:aws[a-z-]*:lambda:([a-z0-9-]+):(\d{12}):layer:([A-Za-z0-9_-]+):(\d+)$/;
/** A layer name that says it is built for x86_64 (`aws-otel-nodejs-amd64-ver-1-30-2`, `…-x86_64-…`). */
const X86_NAME = /(^|[-_])(amd64|x86[-_]?64|x64)([-_]|$)/i;

function checkedLayerArn(stack: Stack, arn: string): string {
  const match = LAYER_VERSION_ARN.exec(arn);
  if (!match) {
    throw new BallastConfigError(stack, `-c otelLayerArn must be a Lambda layer version ARN `
      + `(arn:aws:lambda:<region>:<account>:layer:<name>:<version>), got '${arn}'.`);
  }
  const [, layerRegion, , name] = match as unknown as [string, string, string, string];
  const region = stack.region;
  if (Token.isUnresolved(region)) {
    Annotations.of(stack).addWarningV2('ballast:otelLayerRegionUnchecked', `The stack has no region at synth, so nothing checks that `
      + `-c otelLayerArn (${layerRegion}) is in the region it deploys to: Lambda attaches layers of the function's own region only.`);
  } else if (layerRegion !== region) {
    throw new BallastConfigError(stack, `-c otelLayerArn is a layer in ${layerRegion}, but the stack deploys to ${region} and Lambda `
      + `attaches layers of the function's own region only: pass the layer's ARN for ${region}`
      + `${OTEL_LAYER_ARNS[region] ? ` (${OTEL_LAYER_ARNS[region]})` : ''}, or leave the flag out for the default.`);
  }
  const x86 = X86_NAME.exec(name);
  if (x86) {
    throw new BallastConfigError(stack, `-c otelLayerArn names an x86_64 layer ('${name}' says ${x86[2]}), but ballast's functions run on `
      + `arm64: pass its arm64 build, or ${OTEL_LAYER_NAME}, which ships both.`);
  }
  if (/^aws-otel-nodejs/.test(name)) {
    throw new BallastConfigError(stack, `-c otelLayerArn names the legacy ADOT layer '${name}', whose documentation stops at Node.js 22 `
      + `and which has no ${OTEL_EXEC_WRAPPER}: pass ${OTEL_LAYER_NAME}'s ARN for the region instead.`);
  }
  if (name !== OTEL_LAYER_NAME) {
    Annotations.of(stack).addWarningV2('ballast:otelLayerUnknown', `-c otelLayerArn names '${name}', not ${OTEL_LAYER_NAME}: the functions `
      + `still get ${OTEL_LAYER_NAME}'s environment (AWS_LAMBDA_EXEC_WRAPPER=${OTEL_EXEC_WRAPPER}, OTEL_*), so make sure the layer has that `
      + 'wrapper and is built for arm64 and nodejs24.x.');
  }
  return arn;
}
