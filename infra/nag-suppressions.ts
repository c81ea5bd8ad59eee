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

const XRAY: ReviewedFinding = {
  rule: 'AwsSolutions-IAM5[Resource::*]',
  reason: 'Active X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level '
    + 'permissions, so CDK grants them on "*". Every other statement of this role names its resources '
    + '(checked by test/infra/stack.test.ts).',
};

const VPC_ACCESS: ReviewedFinding = {
  rule: AWS_MANAGED('service-role/AWSLambdaVPCAccessExecutionRole'),
  reason: 'The function runs in the VPC (cache, private endpoints), so Lambda must create, describe and delete its '
    + 'ENIs (ec2:CreateNetworkInterface, DescribeNetworkInterfaces, DescribeSubnets, DeleteNetworkInterface, '
    + '(Un)AssignPrivateIpAddresses), actions that cannot be scoped to resources. This AWS-maintained policy is '
    + 'the documented way to grant them and follows Lambda\'s requirements as they change; it also carries the '
    + 'basic CloudWatch Logs actions on "*", which Lambda needs anyway.',
};

/** The execution role of a ballast function: X-Ray always, VPC access when it runs in the VPC. */
function acknowledgeFunction(fn: BallastFunction): void {
  acknowledge(fn.executionRole, XRAY);
  if (fn.isBoundToVpc) acknowledge(fn.executionRole, VPC_ACCESS);
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
  for (const fn of [stack.worker.function, stack.worker.preTrafficCheck, stack.invalidator, stack.invalidationRepair, stack.readApi]) acknowledgeFunction(fn);

  // The worker's CodeDeploy deployment group (LambdaDeploymentGroup owns the role).
  const deployment = stack.worker.deploymentGroup;
  acknowledge(deployment.role,
    {
      rule: AWS_MANAGED('service-role/AWSCodeDeployRoleForLambdaLimited'),
      reason: 'CodeDeploy\'s documented service-role policy for Lambda deployments, attached by every '
        + 'LambdaDeploymentGroup: it lets CodeDeploy read and shift the alias and read the rollback alarms, and only '
        + 'for names that follow CodeDeploy\'s conventions publish to CodeDeployTopic_* and invoke CodeDeployHook_*. '
        + 'Our own hook function is granted to the role separately (next finding).',
    },
    {
      rule: `AwsSolutions-IAM5[Resource::${arnInFinding(stack.worker.preTrafficCheck.node.defaultChild as CfnElement)}:*]`,
      reason: 'CDK grants the deployment role lambda:InvokeFunction on the pre-traffic hook function and its '
        + 'qualifiers (ARN:*); the wildcard only spans versions and aliases of that one hook function.',
    });

  // Observability (topic, dashboard, alarms) produces no findings today; should it, acknowledge
  // them here by path, e.g. `acknowledge(constructAt(stack, 'Observability/Alarms'), { rule, reason })`.
}
