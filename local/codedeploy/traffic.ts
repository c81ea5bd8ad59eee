/** One step of a Lambda deployment: the new version's share of the alias, held this long. */
export interface TrafficStep {
  /** 0–1; the last step of every deployment is 1 (the alias points at the new version). */
  readonly weight: number;
  /** Minutes of deployment time before the next step; 0 for the last. */
  readonly holdMinutes: number;
}

/** How a deployment config shifts traffic, as CodeDeploy's `TrafficRoutingConfig` says it. */
export type TrafficRouting =
  | { readonly type: 'AllAtOnce' }
  | { readonly type: 'TimeBasedCanary'; readonly percentage: number; readonly intervalMinutes: number }
  | { readonly type: 'TimeBasedLinear'; readonly percentage: number; readonly intervalMinutes: number };

const CANARY = /^CodeDeployDefault\.LambdaCanary(\d+)Percent(\d+)Minutes?$/;
const LINEAR = /^CodeDeployDefault\.LambdaLinear(\d+)PercentEvery(\d+)Minutes?$/;

/**
 * The traffic routing of a predefined Lambda deployment config (`CodeDeployDefault.LambdaAllAtOnce`,
 * `…LambdaCanary10Percent5Minutes`, `…LambdaLinear10PercentEvery1Minute`, …).
 *
 * @throws Error for a name that is not a predefined Lambda config (custom configs are resources: see {@link customTrafficRouting})
 */
export function predefinedTrafficRouting(name: string): TrafficRouting {
  if (name === 'CodeDeployDefault.LambdaAllAtOnce') return { type: 'AllAtOnce' };
  const canary = CANARY.exec(name);
  if (canary) return checked({ type: 'TimeBasedCanary', percentage: Number(canary[1]), intervalMinutes: Number(canary[2]) }, name);
  const linear = LINEAR.exec(name);
  if (linear) return checked({ type: 'TimeBasedLinear', percentage: Number(linear[1]), intervalMinutes: Number(linear[2]) }, name);
  throw new Error(`deployment config ${name} is not a predefined Lambda config (CodeDeployDefault.LambdaAllAtOnce, `
    + '…LambdaCanary<P>Percent<M>Minutes, …LambdaLinear<P>PercentEvery<M>Minutes) nor a DeploymentConfig resource of the template');
}

/** The traffic routing of an `AWS::CodeDeploy::DeploymentConfig` resource's properties (a custom config). */
export function customTrafficRouting(properties: Readonly<Record<string, unknown>>, logicalId: string): TrafficRouting {
  const routing = properties.TrafficRoutingConfig as Record<string, Record<string, unknown> | string> | undefined;
  if (properties.ComputePlatform !== undefined && properties.ComputePlatform !== 'Lambda') {
    throw new Error(`deployment config ${logicalId} is for ${String(properties.ComputePlatform)}, not Lambda`);
  }
  switch (routing?.Type) {
    case 'AllAtOnce':
      return { type: 'AllAtOnce' };
    case 'TimeBasedCanary': {
      const canary = routing.TimeBasedCanary as Record<string, unknown> | undefined;
      return checked({ type: 'TimeBasedCanary', percentage: Number(canary?.CanaryPercentage), intervalMinutes: Number(canary?.CanaryInterval) }, logicalId);
    }
    case 'TimeBasedLinear': {
      const linear = routing.TimeBasedLinear as Record<string, unknown> | undefined;
      return checked({ type: 'TimeBasedLinear', percentage: Number(linear?.LinearPercentage), intervalMinutes: Number(linear?.LinearInterval) }, logicalId);
    }
    default:
      throw new Error(`deployment config ${logicalId}: TrafficRoutingConfig.Type must be AllAtOnce, TimeBasedCanary or TimeBasedLinear, got ${String(routing?.Type)}`);
  }
}

/**
 * The steps CodeDeploy takes for a routing: a canary shifts its percentage, waits its interval,
 * then shifts the rest; a linear config adds its percentage every interval until the next step
 * would reach 100 %; all-at-once is the last step alone.
 *
 * @example
 * trafficSteps({ type: 'TimeBasedCanary', percentage: 10, intervalMinutes: 5 });
 * // [{ weight: 0.1, holdMinutes: 5 }, { weight: 1, holdMinutes: 0 }]
 */
export function trafficSteps(routing: TrafficRouting): TrafficStep[] {
  const last = { weight: 1, holdMinutes: 0 };
  if (routing.type === 'AllAtOnce') return [last];
  if (routing.type === 'TimeBasedCanary') return [{ weight: routing.percentage / 100, holdMinutes: routing.intervalMinutes }, last];
  const steps: TrafficStep[] = [];
  for (let percent = routing.percentage; percent < 100; percent += routing.percentage) {
    steps.push({ weight: percent / 100, holdMinutes: routing.intervalMinutes });
  }
  return [...steps, last];
}

/** Minutes of deployment time the steps take (the sum of their holds). */
export function trafficMinutes(steps: readonly TrafficStep[]): number {
  return steps.reduce((sum, step) => sum + step.holdMinutes, 0);
}

function checked(routing: Exclude<TrafficRouting, { type: 'AllAtOnce' }>, source: string): TrafficRouting {
  if (!Number.isInteger(routing.percentage) || routing.percentage < 1 || routing.percentage > 99) {
    throw new Error(`deployment config ${source}: the percentage must be a whole number from 1 to 99, got ${routing.percentage}`);
  }
  if (!Number.isInteger(routing.intervalMinutes) || routing.intervalMinutes < 1 || routing.intervalMinutes > 2880) {
    throw new Error(`deployment config ${source}: the interval must be whole minutes from 1 to 2880, got ${routing.intervalMinutes}`);
  }
  return routing;
}
