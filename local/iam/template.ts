/**
 * The stack's access control as its template defines it, resolved to local names: each role's
 * identity policies, each resource's own policy (queue and topic policies, Lambda permissions),
 * the VPC endpoints' policies, and which function runs as which role inside which VPC. What the
 * local cloud's authorizer evaluates every call against.
 */
import { resolve, type ResolutionContext } from '../cloud/intrinsics.ts';
import { LOCAL_REGION } from '../engines/index.ts';
import { AWS_MANAGED_POLICIES } from './managed-policies.ts';

/** An IAM policy document as written in a template. */
export interface PolicyDocument {
  readonly Version?: string;
  readonly Statement: readonly Record<string, unknown>[] | Record<string, unknown>;
}

export interface NamedPolicy {
  /** Where it comes from, for a refusal's explanation: `WorkerFunctionServiceRoleDefaultPolicy…`, `AWSLambdaBasicExecutionRole`. */
  readonly name: string;
  readonly policy: PolicyDocument;
}

export interface LocalRole {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  readonly policies: readonly NamedPolicy[];
  /** Managed policies the local cloud has no document for: they grant nothing here (said at start). */
  readonly unknownManagedPolicies: readonly string[];
}

/** A VPC endpoint: calls to its service from a function in its VPC pass its policy. */
export interface LocalVpcEndpoint {
  readonly logicalId: string;
  /** `dynamodb`, `sqs`, ... (from `com.amazonaws.<region>.<service>`). */
  readonly service: string;
  readonly vpcId: string;
  readonly policy: NamedPolicy;
}

export interface LocalSubscription {
  readonly topicArn: string;
  readonly protocol: string;
  readonly endpoint: string;
}

export interface StackIam {
  /** By role ARN. */
  readonly roles: ReadonlyMap<string, LocalRole>;
  /** By function name: the role it runs as and the VPC it runs in, if any. */
  readonly functions: ReadonlyMap<string, { readonly roleArn: string; readonly vpcId?: string }>;
  /** By resource ARN (a queue, a topic, a function): its resource-based policy. */
  readonly resourcePolicies: ReadonlyMap<string, NamedPolicy>;
  readonly endpoints: readonly LocalVpcEndpoint[];
  /** The SNS topics (by ARN, with their names) and their subscriptions. */
  readonly topics: ReadonlyMap<string, { readonly logicalId: string; readonly name: string }>;
  readonly subscriptions: readonly LocalSubscription[];
}

type Resources = Readonly<Record<string, { readonly Type: string; readonly Properties?: Record<string, unknown> }>>;

/**
 * Reads the template's access control. Policies may name resources the local cloud does not
 * create (a KMS key, a log group): such a reference resolves to an ARN that matches nothing here,
 * `arn:aws:local-unresolved:::<logical id>`, rather than failing the start.
 */
export function readStackIam(resources: Resources, context: ResolutionContext): StackIam {
  const lenient = lenientContext(context);
  const entries = Object.entries(resources);
  const of = (type: string) => entries.filter(([, r]) => r.Type === type);
  const props = (r: { Properties?: Record<string, unknown> }) => r.Properties ?? {};
  const arnOf = (value: unknown) => String(resolve(value, lenient));

  const inline = new Map<string, NamedPolicy[]>();
  const attach = (roleRefs: unknown, policy: NamedPolicy) => {
    for (const role of (resolve(roleRefs ?? [], lenient) as unknown[])) inline.set(String(role), [...(inline.get(String(role)) ?? []), policy]);
  };
  for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']) {
    for (const [id, r] of of(type)) attach(props(r).Roles, { name: id, policy: resolve(props(r).PolicyDocument, lenient) as PolicyDocument });
  }
  const roles = new Map<string, LocalRole>();
  for (const [id, r] of of('AWS::IAM::Role')) {
    const p = props(r);
    const name = String(context.refs.get(id));
    const own = ((p.Policies ?? []) as { PolicyName?: unknown; PolicyDocument?: unknown }[])
      .map((policy) => ({ name: `${id}/${String(resolve(policy.PolicyName, lenient))}`, policy: resolve(policy.PolicyDocument, lenient) as PolicyDocument }));
    const managed = ((resolve(p.ManagedPolicyArns ?? [], lenient)) as unknown[]).map(String);
    const known = managed.flatMap((arn) => {
      const policy = AWS_MANAGED_POLICIES[arn.replace(/^arn:[^:]+:/, 'arn:aws:')];
      return policy ? [{ name: arn.split('/').at(-1) ?? arn, policy }] : [];
    });
    roles.set(String(context.attributes.get(id)?.Arn), {
      logicalId: id, name, arn: String(context.attributes.get(id)?.Arn), policies: [...own, ...known, ...(inline.get(name) ?? [])],
      unknownManagedPolicies: managed.filter((arn) => !AWS_MANAGED_POLICIES[arn.replace(/^arn:[^:]+:/, 'arn:aws:')]),
    });
  }

  const subnetVpc = new Map(of('AWS::EC2::Subnet').map(([id, r]) => [String(context.refs.get(id)), String(resolve(props(r).VpcId, lenient))]));
  const functions = new Map<string, { roleArn: string; vpcId?: string }>();
  for (const [id, r] of of('AWS::Lambda::Function')) {
    const p = props(r);
    const subnets = (resolve((p.VpcConfig as { SubnetIds?: unknown } | undefined)?.SubnetIds ?? [], lenient) as unknown[]).map(String);
    const vpcId = subnets.map((subnet) => subnetVpc.get(subnet)).find(Boolean);
    functions.set(String(context.refs.get(id)), { roleArn: arnOf(p.Role), ...(vpcId ? { vpcId } : {}) });
  }

  const resourcePolicies = new Map<string, NamedPolicy>();
  const addStatements = (arn: string, name: string, statements: readonly Record<string, unknown>[]) => {
    const existing = resourcePolicies.get(arn);
    const before = existing ? statementsOf(existing.policy) : [];
    resourcePolicies.set(arn, { name: existing ? `${existing.name}+${name}` : name, policy: { Version: '2012-10-17', Statement: [...before, ...statements] } });
  };
  for (const [id, r] of of('AWS::SQS::QueuePolicy')) {
    const document = resolve(props(r).PolicyDocument, lenient) as PolicyDocument;
    for (const url of resolve(props(r).Queues ?? [], lenient) as unknown[]) {
      const queue = [...context.attributes.values()].find((attributes) => attributes.QueueUrl === url);
      if (queue) addStatements(String(queue.Arn), id, statementsOf(document));
    }
  }
  const topics = new Map<string, { logicalId: string; name: string }>();
  for (const [id] of of('AWS::SNS::Topic')) topics.set(String(context.refs.get(id)), { logicalId: id, name: String(context.attributes.get(id)?.TopicName) });
  for (const [id, r] of of('AWS::SNS::TopicPolicy')) {
    const document = resolve(props(r).PolicyDocument, lenient) as PolicyDocument;
    for (const arn of resolve(props(r).Topics ?? [], lenient) as unknown[]) addStatements(String(arn), id, statementsOf(document));
  }
  // A topic without a topic policy has SNS's default one: the account may publish (and manage it).
  for (const arn of topics.keys()) {
    if (!resourcePolicies.has(arn)) addStatements(arn, 'SNS default topic policy', [defaultTopicStatement(arn, context.accountId)]);
  }
  for (const [id, r] of of('AWS::Lambda::Permission')) {
    const p = resolve(props(r), lenient) as Record<string, unknown>;
    const target = String(p.FunctionName);
    const functionArn = target.startsWith('arn:') ? target : `arn:aws:lambda:${LOCAL_REGION}:${context.accountId}:function:${target}`;
    const principal = String(p.Principal);
    const condition: Record<string, Record<string, unknown>> = {};
    if (p.SourceArn !== undefined) condition.ArnLike = { 'aws:SourceArn': p.SourceArn };
    if (p.SourceAccount !== undefined) condition.StringEquals = { 'aws:SourceAccount': p.SourceAccount };
    if (p.FunctionUrlAuthType !== undefined) condition.StringEquals = { ...condition.StringEquals, 'lambda:FunctionUrlAuthType': p.FunctionUrlAuthType };
    addStatements(functionArn, id, [{
      Sid: id, Effect: 'Allow', Action: p.Action, Resource: functionArn,
      Principal: principal.endsWith('.amazonaws.com') ? { Service: principal } : principal === '*' ? '*' : { AWS: principal },
      ...(Object.keys(condition).length > 0 ? { Condition: condition } : {}),
    }]);
  }

  const endpoints: LocalVpcEndpoint[] = of('AWS::EC2::VPCEndpoint').flatMap(([id, r]) => {
    const p = resolve(props(r), lenient) as Record<string, unknown>;
    // An interface endpoint without private DNS is reached only by its own DNS name, which the SDK's default endpoint is not.
    if (p.VpcEndpointType === 'Interface' && p.PrivateDnsEnabled === false) return [];
    const service = String(p.ServiceName).split('.').at(-1) ?? '';
    const policy = p.PolicyDocument === undefined ? FULL_ACCESS : anyPrincipalAsStar(p.PolicyDocument as PolicyDocument);
    return [{ logicalId: id, service, vpcId: String(p.VpcId), policy: { name: `${id} (VPC endpoint policy)`, policy } }];
  });

  const subscriptions: LocalSubscription[] = [];
  for (const [id, r] of of('AWS::SNS::Topic')) {
    for (const subscription of (resolve(props(r).Subscription ?? [], lenient) as { Protocol?: unknown; Endpoint?: unknown }[])) {
      subscriptions.push({ topicArn: String(context.refs.get(id)), protocol: String(subscription.Protocol), endpoint: String(subscription.Endpoint) });
    }
  }
  for (const [, r] of of('AWS::SNS::Subscription')) {
    const p = resolve(props(r), lenient) as Record<string, unknown>;
    subscriptions.push({ topicArn: String(p.TopicArn), protocol: String(p.Protocol), endpoint: String(p.Endpoint) });
  }
  return { roles, functions, resourcePolicies, endpoints, topics, subscriptions };
}

/** A stack without access control, until its template is read. */
export function emptyStackIam(): StackIam {
  return { roles: new Map(), functions: new Map(), resourcePolicies: new Map(), endpoints: [], topics: new Map(), subscriptions: [] };
}

/** A policy's statements as a list (a document may hold one statement as an object). */
export function statementsOf(policy: PolicyDocument): readonly Record<string, unknown>[] {
  return Array.isArray(policy.Statement) ? policy.Statement : [policy.Statement as Record<string, unknown>];
}

/**
 * An endpoint policy with `"Principal": {"AWS": "*"}` (what CDK's `AnyPrincipal` writes) as
 * `"Principal": "*"`: IAM treats the two alike, and the evaluator accepts only the latter in an
 * endpoint policy.
 */
function anyPrincipalAsStar(policy: PolicyDocument): PolicyDocument {
  const star = (principal: unknown) => (typeof principal === 'object' && principal !== null && JSON.stringify(principal) === '{"AWS":"*"}' ? '*' : principal);
  return { ...policy, Statement: statementsOf(policy).map((statement) => ('Principal' in statement ? { ...statement, Principal: star(statement.Principal) } : statement)) };
}

/** What an endpoint without a policy document allows: everything. */
const FULL_ACCESS: PolicyDocument = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: '*', Action: '*', Resource: '*' }] };

/** The statement SNS's default topic policy grants the topic owner's account (any principal of it). */
function defaultTopicStatement(topicArn: string, accountId: string): Record<string, unknown> {
  return {
    Sid: '__default_statement_ID', Effect: 'Allow', Principal: { AWS: '*' }, Resource: topicArn,
    Action: ['SNS:GetTopicAttributes', 'SNS:SetTopicAttributes', 'SNS:AddPermission', 'SNS:RemovePermission', 'SNS:DeleteTopic', 'SNS:Subscribe', 'SNS:ListSubscriptionsByTopic', 'SNS:Publish'],
    Condition: { StringEquals: { 'AWS:SourceOwner': accountId } },
  };
}

/** `context`, where a reference the local cloud did not create resolves to a placeholder ARN. */
function lenientContext(context: ResolutionContext): ResolutionContext {
  const placeholder = (id: string) => `arn:aws:local-unresolved:::${id}`;
  const refs = new Map(context.refs);
  const attributes = new Map(context.attributes);
  return {
    ...context,
    refs: { has: () => true, get: (id: string) => (refs.has(id) ? refs.get(id) : placeholder(id)) } as unknown as ReadonlyMap<string, unknown>,
    attributes: {
      get: (id: string) => new Proxy(attributes.get(id) ?? {}, { get: (target, name) => (target as Record<string | symbol, unknown>)[name] ?? placeholder(`${id}.${String(name)}`) }),
    } as unknown as ReadonlyMap<string, Readonly<Record<string, unknown>>>,
  };
}
