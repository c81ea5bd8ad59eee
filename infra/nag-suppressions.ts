/**
 * cdk-nag for ballast: the rule pack every synth runs (`addNagChecks`, used by the CLI app and the
 * tests alike) and the findings that were reviewed and accepted (`suppressReviewedFindings`), each
 * acknowledged on the narrowest construct that carries it, with its reason.
 *
 * Acknowledgments use the qualified id `AwsSolutions::<rule>[<finding>]`: cdk-nag still reports the
 * finding and CDK moves it to the validation report's `suppressedViolations` together with the
 * reason and the construct path it was acknowledged at, so the report is the audit trail.
 */
import { Stack, Validations, type CfnElement, type Stage } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import type { BallastStack } from './ballast-stack.ts';
import type { BallastFunction } from './constructs/ballast-function.ts';

/** The namespace CDK's validation report gives the AwsSolutions pack's findings. */
export const NAG_NAMESPACE = 'AwsSolutions';

/**
 * Registers cdk-nag's AwsSolutions rule pack on `app`. Findings are checked at `app.synth()`: an
 * unacknowledged error fails the synth (in-process apps throw, the CLI exits 1), warnings are
 * printed; both land in `<outdir>/validation-report.json`.
 * @example
 * const app = new App();
 * const stack = new BallastStack(app, 'ballast-dev', { config: environmentConfig('dev') });
 * suppressReviewedFindings(stack);
 * addNagChecks(app);
 */
export function addNagChecks(app: Stage): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
}

/** One reviewed finding: the rule (with its finding in brackets for granular rules) and why it stays. */
interface ReviewedFinding {
  readonly rule: string;
  readonly reason: string;
}

function acknowledge(scope: IConstruct, ...findings: ReviewedFinding[]): void {
  for (const { rule, reason } of findings) Validations.of(scope).acknowledge({ id: `${NAG_NAMESPACE}::${rule}`, reason });
}

const AWS_MANAGED = (name: string) => `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${name}]`;

/** How cdk-nag names the ARN of a resource in a finding: `<LogicalId.Arn>`. */
function arnInFinding(element: CfnElement): string {
  const stack = Stack.of(element);
  return `<${stack.resolve(stack.getLogicalId(element))}.Arn>`;
}

/**
 * The one finding every ballast function role carries: statements on "*" for actions that support
 * no resource-level permission. Its reason lists exactly the ones this role has.
 */
function wildcardResources(fn: BallastFunction, extra?: string): ReviewedFinding {
  const parts = [
    'Active X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions, so CDK grants them on "*" '
      + '(the X-Ray daemon that active tracing runs relays with them Lambda\'s segments and the OpenTelemetry layer\'s spans; the layer needs '
      + 'nothing more: its sampler is local, so no xray:GetSampling*, and it does not export to the OTLP endpoint, so no xray:PutSpans)',
    ...(fn.isBoundToVpc ? ['the function runs in the VPC, so Lambda manages its ENIs with this role: ec2:DescribeNetworkInterfaces and '
      + 'ec2:DescribeSubnets support no resource-level permissions and Lambda\'s documentation requires "*" for ec2:CreateNetworkInterface, '
      + 'DeleteNetworkInterface, AssignPrivateIpAddresses and UnassignPrivateIpAddresses (the EC2 half of AWSLambdaVPCAccessExecutionRole, '
      + 'without its logs actions on every log group)'] : []),
    ...(extra ? [extra] : []),
  ];
  return {
    rule: 'AwsSolutions-IAM5[Resource::*]',
    reason: `${parts.join('; ')}. Every other statement of this role names its resources (checked by test/infra/stack.test.ts).`,
  };
}

/** CDK grants CodeDeploy's role lambda:InvokeFunction on a hook function and its qualifiers. */
function hookInvocation(hook: BallastFunction, which: string): ReviewedFinding {
  return {
    rule: `AwsSolutions-IAM5[Resource::${arnInFinding(hook.node.defaultChild as CfnElement)}:*]`,
    reason: `CDK grants the deployment role lambda:InvokeFunction on the ${which} hook function and its qualifiers (ARN:*); `
      + 'the wildcard only spans versions and aliases of that one hook function.',
  };
}

/** The construct at `path` below the stack, for findings on constructs the stack does not expose. */
function constructAt(stack: Stack, path: string): IConstruct {
  let node: IConstruct | undefined = stack;
  for (const id of path.split('/')) node = node?.node.tryFindChild(id);
  if (!node) throw new Error(`nag-suppressions: no construct at '${stack.node.path}/${path}'; the stack changed, review its acknowledgments.`);
  return node;
}

/**
 * Acknowledges the cdk-nag findings that were reviewed and accepted, each with its reason. Call it
 * once per stack, before `app.synth()`.
 * @example
 * const stack = new BallastStack(app, 'ballast-dev', { config });
 * suppressReviewedFindings(stack);
 */
export function suppressReviewedFindings(stack: BallastStack): void {
  for (const fn of [stack.worker.function, stack.worker.preTrafficCheck, stack.invalidator, stack.invalidationRepair, stack.readApi]) {
    acknowledge(fn.executionRole, wildcardResources(fn));
  }
  const { postTrafficCheck } = stack.worker;
  if (postTrafficCheck) {
    acknowledge(postTrafficCheck.executionRole, wildcardResources(postTrafficCheck,
      'the post-traffic check reads the new version\'s record count with cloudwatch:GetMetricData, which supports no resource-level permissions'));
  }

  // The worker's CodeDeploy deployment group (LambdaDeploymentGroup owns the role).
  const deployment = stack.worker.deploymentGroup;
  acknowledge(deployment.role,
    {
      rule: AWS_MANAGED('service-role/AWSCodeDeployRoleForLambdaLimited'),
      reason: 'CodeDeploy\'s documented service-role policy for Lambda deployments, attached by every '
        + 'LambdaDeploymentGroup: it lets CodeDeploy read and shift the alias and read the rollback alarms, and only '
        + 'for names that follow CodeDeploy\'s conventions publish to CodeDeployTopic_* and invoke CodeDeployHook_*. '
        + 'Our own hook functions are granted to the role separately (next findings).',
    },
    hookInvocation(stack.worker.preTrafficCheck, 'pre-traffic'),
    ...(postTrafficCheck ? [hookInvocation(postTrafficCheck, 'post-traffic')] : []));

  // The cache's disabled `default` user (BallastCache).
  acknowledge(constructAt(stack, 'Cache/DefaultUserPassword'), {
    rule: 'AwsSolutions-SMG4',
    reason: 'This secret is only the password of the cache\'s "default" user, which ElastiCache requires in every user '
      + 'group (and a Valkey user group admits only users with a password or IAM authentication). That user\'s access '
      + 'string is "off -@all": disabled, no command, no key, so the password authenticates nothing and rotating it '
      + 'would change nothing. Secrets Manager generates it so that it appears in no template.',
  });

  // Observability (topic, dashboard, alarms) produces no findings today; should it, acknowledge
  // them here by path, e.g. `acknowledge(constructAt(stack, 'Observability/Alarms'), { rule, reason })`.
}
