/**
 * The local cloud's IAM: decides each call as AWS would, with the stack's own policies (see
 * `template.ts`), through `@cloud-copilot/iam-simulate` rather than a hand-written copy of IAM's
 * evaluation logic: explicit denies first, then an allow from the identity or the resource policy
 * (same account), every VPC endpoint policy on the way, and their conditions.
 *
 * Decisions are cached by everything they depend on; a revocation (the chaos run's `--revoke`) or
 * a stack update clears the cache.
 */
import type { runSimulation as RunSimulation, runUnsafeSimulation as RunUnsafeSimulation, Simulation } from '@cloud-copilot/iam-simulate';
import { statementsOf, type NamedPolicy, type StackIam } from './template.ts';
import type { RequestedCall } from './requests.ts';

/** Who makes a call: a function (its role's session), or an AWS service acting for the stack. */
export type CallPrincipal =
  | { readonly kind: 'function'; readonly functionName: string; readonly functionArn: string }
  | {
    readonly kind: 'service';
    /** `cloudwatch.amazonaws.com` */
    readonly service: string;
    /** `aws:SourceArn`: what the service acts for (an alarm's ARN). */
    readonly sourceArn: string;
  };

/** How the call travels: from inside the function's VPC (through its endpoint for the service, if any) or not. */
export interface CallRoute {
  /** The service whose endpoint the call would pass, `dynamodb` or `sqs`; none for calls the Lambda service makes itself (event source polling). */
  readonly service?: string;
}

export interface Decision {
  readonly allowed: boolean;
  readonly action: string;
  readonly resource: string;
  /** The ARN AWS would name in the refusal: the role's session, or the service. */
  readonly principal: string;
  /** What decided: the statement that allowed or denied, or which allow was missing. */
  readonly reason: string;
}

/** What a run's report says of the local IAM: the grants taken away, the calls refused by action, the latest refusals as AWS words them. */
export interface AccessReport {
  readonly revoked: readonly string[];
  readonly refused: number;
  readonly byAction: Readonly<Record<string, { readonly allowed: number; readonly refused: number }>>;
  readonly latestRefusals: readonly string[];
}

export function accessReport(authorizer: Authorizer, revoked: readonly string[]): AccessReport {
  const { refused, byAction, latestRefusals } = authorizer.summary();
  return { revoked, refused, byAction, latestRefusals: latestRefusals.slice(-5).map(refusalMessage) };
}

/** `access refused: 3 calls (revoked: x): action ×n; latest: …`, for a run's printed summary. */
export function formatAccess(access: AccessReport): string {
  const refusedActions = Object.entries(access.byAction).filter(([, counts]) => counts.refused > 0).map(([action, counts]) => `${action} ×${counts.refused}`);
  return `local IAM: ${access.refused} calls refused${access.revoked.length ? ` (revoked: ${access.revoked.join(', ')})` : ''}`
    + `${access.refused ? `: ${refusedActions.join(', ')}; latest: ${access.latestRefusals.at(-1)}` : ''}`;
}

/** A call refused, as AWS's `AccessDenied` message words it. */
export function refusalMessage(decision: Decision): string {
  return `User: ${decision.principal} is not authorized to perform: ${decision.action} on resource: ${decision.resource} ${decision.reason}`;
}

export interface AuthorizerOptions {
  readonly iam: StackIam;
  readonly accountId: string;
  /** Called on every refusal (the cloud logs it and counts it). */
  readonly onRefusal?: (decision: Decision) => void;
}

export class Authorizer {
  private iam: StackIam;
  private readonly cache = new Map<string, Promise<Decision>>();
  /** Sids and actions taken out of every policy, e.g. by `--revoke`. */
  private readonly revoked = new Set<string>();
  private readonly counts = { allowed: 0, refused: 0 };
  /** Calls allowed and refused, by action. */
  private readonly byAction = new Map<string, { allowed: number; refused: number }>();
  private readonly recent: Decision[] = [];

  private readonly options: AuthorizerOptions;

  constructor(options: AuthorizerOptions) {
    this.options = options;
    this.iam = options.iam;
  }

  /** How many calls were allowed and refused, and the latest refusals (newest last). */
  summary(): {
    readonly allowed: number;
    readonly refused: number;
    readonly byAction: Readonly<Record<string, { readonly allowed: number; readonly refused: number }>>;
    readonly latestRefusals: readonly Decision[];
  } {
    return { ...this.counts, byAction: Object.fromEntries([...this.byAction].map(([action, counts]) => [action, { ...counts }])), latestRefusals: [...this.recent] };
  }

  /** Takes a statement (by `Sid`) or an action out of every policy, from now on. */
  revoke(sidOrAction: string): void {
    this.revoked.add(sidOrAction);
    this.cache.clear();
  }

  /** The policies after a stack update. */
  replace(iam: StackIam): void {
    this.iam = iam;
    this.cache.clear();
  }

  /** Decides every call of one request; the first refusal, if any, decides the request. */
  async authorizeAll(principal: CallPrincipal, calls: readonly RequestedCall[], route: CallRoute = {}): Promise<Decision | undefined> {
    for (const call of calls) {
      const decision = await this.authorize(principal, call, route);
      if (!decision.allowed) return decision;
    }
    return undefined;
  }

  async authorize(principal: CallPrincipal, call: RequestedCall, route: CallRoute = {}): Promise<Decision> {
    const key = JSON.stringify([principal, call, route.service]);
    let decided = this.cache.get(key);
    if (!decided) {
      decided = this.decide(principal, call, route);
      this.cache.set(key, decided);
    }
    const decision = await decided;
    const counts = this.byAction.get(call.action) ?? { allowed: 0, refused: 0 };
    this.byAction.set(call.action, counts);
    counts[decision.allowed ? 'allowed' : 'refused'] += 1;
    if (decision.allowed) {
      this.counts.allowed += 1;
    } else {
      this.counts.refused += 1;
      this.recent.push(decision);
      if (this.recent.length > 50) this.recent.shift();
      this.options.onRefusal?.(decision);
    }
    return decision;
  }

  private async decide(principal: CallPrincipal, call: RequestedCall, route: CallRoute): Promise<Decision> {
    const { accountId } = this.options;
    const resourcePolicy = this.iam.resourcePolicies.get(call.resource.replace(/(:function:[^:]+):[^:]+$/, '$1'));
    let principalArn: string;
    let identityPolicies: NamedPolicy[] = [];
    let endpoint: NamedPolicy | undefined;
    const context: Record<string, string> = { 'aws:SecureTransport': 'true', 'aws:CurrentTime': new Date().toISOString() };
    if (principal.kind === 'function') {
      const fn = this.iam.functions.get(principal.functionName);
      const role = fn ? this.iam.roles.get(fn.roleArn) : undefined;
      if (!fn || !role) return { allowed: false, action: call.action, resource: call.resource, principal: principal.functionArn, reason: 'because the function has no role in the template' };
      principalArn = `arn:aws:sts::${accountId}:assumed-role/${role.name}/${principal.functionName}`;
      identityPolicies = [...role.policies];
      Object.assign(context, {
        'aws:PrincipalArn': role.arn, 'aws:PrincipalAccount': accountId, 'aws:PrincipalType': 'AssumedRole',
        'lambda:SourceFunctionArn': principal.functionArn,
      });
      const found = fn.vpcId && route.service ? this.iam.endpoints.find((candidate) => candidate.vpcId === fn.vpcId && candidate.service === route.service) : undefined;
      if (found) {
        endpoint = found.policy;
        context['aws:SourceVpc'] = found.vpcId;
        context['aws:SourceVpce'] = found.logicalId;
      }
    } else {
      principalArn = principal.service;
      Object.assign(context, { 'aws:SourceArn': principal.sourceArn, 'aws:SourceAccount': accountId, 'aws:PrincipalServiceName': principal.service });
    }
    const simulation: Simulation = {
      request: { principal: principalArn, action: call.action, resource: { resource: call.resource, accountId }, contextVariables: context },
      identityPolicies: identityPolicies.map((policy) => ({ name: policy.name, policy: this.withoutRevoked(policy.policy) })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(resourcePolicy ? { resourcePolicy: this.withoutRevoked(resourcePolicy.policy) } : {}),
      ...(endpoint ? { vpcEndpointPolicies: [{ name: endpoint.name, policy: this.withoutRevoked(endpoint.policy) }] } : {}),
    };
    const { runSimulation, runUnsafeSimulation } = await evaluator();
    const outcome = await runSimulation(simulation, {});
    const base = { action: call.action, resource: call.resource, principal: principalArn };
    if (outcome.resultType === 'error' && JSON.stringify(outcome.errors).includes('must.use.wildcard')) {
      // The evaluator's data (the Service Authorization Reference) lists no resource type for the
      // action, yet the service authorizes it on the resource the request names: CodeDeploy's
      // PutLifecycleEventHookExecutionStatus on its deployment group, which CDK's grant names and
      // which works on AWS. Evaluated without that check, so without the deciding statement.
      const verdict = runUnsafeSimulation(simulation, {});
      return { ...base, allowed: verdict === 'Allowed', reason: verdict === 'Allowed' ? 'allowed' : verdict === 'ExplicitlyDenied' ? 'with an explicit deny' : `because no policy allows the ${call.action} action` };
    }
    if (outcome.resultType !== 'single') {
      // The simulator refused its input (an action or ARN it does not know): a fault in the mapping, said as such.
      return { ...base, allowed: false, reason: `because the local cloud could not evaluate the call: ${JSON.stringify(outcome.resultType === 'error' ? outcome.errors : outcome.resultType).slice(0, 300)}` };
    }
    const analysis = outcome.result.analysis;
    if (analysis.result === 'Allowed') {
      const by = analysis.resourceAnalysis?.allowStatements?.[0] ?? analysis.identityAnalysis?.allowStatements?.[0];
      return { ...base, allowed: true, reason: `allowed by ${describe(by, resourcePolicy?.name)}` };
    }
    return { ...base, allowed: false, reason: denialReason(analysis, { resource: resourcePolicy?.name, endpoint: endpoint?.name }, call.action) };
  }

  private withoutRevoked(policy: NamedPolicy['policy']): NamedPolicy['policy'] {
    if (this.revoked.size === 0) return policy;
    const kept = statementsOf(policy).flatMap((statement) => {
      if (typeof statement.Sid === 'string' && this.revoked.has(statement.Sid)) return [];
      if (statement.Effect !== 'Allow' || statement.Action === undefined) return [statement];
      const actions = (Array.isArray(statement.Action) ? statement.Action : [statement.Action]).filter((action) => !this.revoked.has(String(action)));
      return actions.length > 0 ? [{ ...statement, Action: actions }] : [];
    });
    return { ...policy, Statement: kept };
  }
}

interface Evaluator { readonly runSimulation: typeof RunSimulation; readonly runUnsafeSimulation: typeof RunUnsafeSimulation }
let loaded: Promise<Evaluator> | undefined;

/**
 * The evaluator, loaded on the first decision: an optional peer (AGPL-3.0, run on the developer's
 * machine only, never bundled), so `/local` and `/testing` load without it until a cloud enforces.
 */
function evaluator(): Promise<Evaluator> {
  loaded ??= import('@cloud-copilot/iam-simulate').then((module) => ({ runSimulation: module.runSimulation, runUnsafeSimulation: module.runUnsafeSimulation }), (error: unknown) => {
    loaded = undefined;
    throw new Error(`the local cloud authorizes calls with @cloud-copilot/iam-simulate, which is not installed: npm install -D @cloud-copilot/iam-simulate (${String(error)})`);
  });
  return loaded;
}

interface StatementMatch { readonly policyId?: string; readonly statement?: { sid(): string | undefined } }

function describe(match: StatementMatch | undefined, resourcePolicyName: string | undefined): string {
  if (!match) return 'a policy';
  const policy = match.policyId ?? resourcePolicyName ?? 'the resource policy';
  const sid = match.statement?.sid();
  return sid ? `statement ${sid} of ${policy}` : `a statement of ${policy}`;
}

type Analysis = Extract<Awaited<ReturnType<typeof RunSimulation>>, { resultType: 'single' }>['result']['analysis'];

/** Words a refusal as AWS does ("because no identity-based policy allows …", "with an explicit deny in …"), naming the deciding statement. */
function denialReason(analysis: Analysis, names: { resource?: string; endpoint?: string }, action: string): string {
  const explicit: [string, StatementMatch[] | undefined][] = [
    ['a VPC endpoint policy', analysis.endpointAnalysis?.denyStatements as StatementMatch[] | undefined],
    ['a resource-based policy', analysis.resourceAnalysis?.denyStatements as StatementMatch[] | undefined],
    ['an identity-based policy', analysis.identityAnalysis?.denyStatements as StatementMatch[] | undefined],
  ];
  for (const [kind, denies] of explicit) {
    if (denies?.length) return `with an explicit deny in ${kind} (${describe(denies[0], kind === 'a VPC endpoint policy' ? names.endpoint : names.resource)})`;
  }
  if (analysis.endpointAnalysis && analysis.endpointAnalysis.result !== 'Allowed') return `because no VPC endpoint policy allows the ${action} action (${names.endpoint})`;
  if (analysis.identityAnalysis?.result === 'Allowed' || analysis.resourceAnalysis?.result === 'Allowed') return `because an allow is missing (${analysis.result})`;
  return names.resource ? `because no identity-based policy or resource-based policy (${names.resource}) allows the ${action} action` : `because no identity-based policy allows the ${action} action`;
}
