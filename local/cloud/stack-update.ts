import type { AliasRouting, LocalVersion } from './alias-routing.ts';
import type { PublishedCode } from './index.ts';
import type { SynthesizedStack } from './assembly.ts';
import type { CodeDeployEndpoint } from './codedeploy-endpoint.ts';
import type { LocalResources } from './provision.ts';
import type { LocalAlarms } from '../cloudwatch/index.ts';
import { runDeployment, type DeploymentEvent, type DeploymentOutcome } from '../codedeploy/deployment.ts';

/** What a stack update did, as CloudFormation and CodeDeploy would report it. */
export interface StackUpdateOutcome {
  /** Succeeded: every function and alarm now runs the new template; otherwise the stack rolled back to the previous one. */
  readonly status: 'UPDATE_COMPLETE' | 'UPDATE_ROLLBACK_COMPLETE';
  /** The deployment of each aliased function with a deployment group. */
  readonly deployments: readonly DeploymentOutcome[];
  /** Functions without a deployment group, replaced in place (all at once), and put back on a rollback. */
  readonly replacedInPlace: readonly string[];
  /** What the new template has that a local update does not apply (e.g. a new event source mapping). */
  readonly notApplied: readonly string[];
}

export interface StackUpdateOptions {
  /** Every event of the update, as it happens (CloudFormation's and CodeDeploy's). */
  readonly onEvent?: (event: DeploymentEvent & { readonly source: string }) => void;
}

/** What a stack update needs from the running local cloud. */
export interface StackUpdateDependencies {
  /** Resolves the new template against the running resources; its versions resolve to `version`. */
  provision(next: SynthesizedStack, version: string): Promise<LocalResources>;
  /** The template the stack runs now, and the new one once an update completes. */
  resources(): LocalResources;
  committed(resources: LocalResources): void;
  /**
   * Puts a template's access control in force: the new one's as the update starts (CloudFormation
   * updates the roles' policies before the alias's deployment, whose hooks need the new grants),
   * the previous one's again on a rollback.
   */
  applyIam(iam: LocalResources['iam']): void;
  readonly routing: ReadonlyMap<string, AliasRouting>;
  readonly alarms: LocalAlarms;
  readonly codeDeploy: CodeDeployEndpoint;
  readonly timeScale: number;
  /** Deployment create times are on the metric clock, as the post-traffic hook compares them with metrics. */
  readonly metricClock: () => number;
  /** The number the next template's versions get. */
  nextVersion(): string;
  /** Publishes a version of a function of the new template (its bundle and environment). */
  publish(fn: LocalResources['functions'][number], code?: PublishedCode, version?: string): LocalVersion;
  runHook(hookFunctionName: string, deploymentId: string): Promise<'Succeeded' | 'Failed'>;
  nextDeploymentId(): string;
}

/**
 * A stack update as `cdk deploy` runs it on AWS: functions without a deployment group and every
 * alarm are replaced in place (the rollback alarms then watch the new version), and each alias
 * with a deployment group gets a new version deployed through the local CodeDeploy. A deployment
 * that fails or stops rolls the whole update back, functions and alarms, as CloudFormation does.
 */
export function stackUpdate(deps: StackUpdateDependencies) {
  return async (next: SynthesizedStack, options: StackUpdateOptions = {}): Promise<StackUpdateOutcome> => {
    const startedMs = Date.now();
    const emit = (source: string, kind: DeploymentEvent['kind'], message: string) => options.onEvent?.({ source, atMs: Date.now() - startedMs, kind, message });
    const { routing, alarms } = deps;
    const current = deps.resources();
    // The number the new template's versions resolve to (what its rollback alarms watch as ExecutedVersion).
    const version = deps.nextVersion();
    const updated = await deps.provision(next, version);
    const notApplied = [
      ...updated.functions.filter((fn) => !routing.has(fn.name)).map((fn) => `new function ${fn.name}`),
      ...updated.mappings.filter((m) => !current.mappings.some((c) => c.functionName === m.functionName && c.eventSourceArn === m.eventSourceArn))
        .map((m) => `new event source mapping ${m.logicalId}`),
      ...updated.queues.filter((q) => !current.queues.some((c) => c.name === q.name)).map((q) => `new queue ${q.name}`),
      ...updated.tables.filter((t) => !current.tables.some((c) => c.name === t.name)).map((t) => `new table ${t.name}`),
    ];
    for (const item of notApplied) emit('CloudFormation', 'created', `not applied locally: ${item}`);

    const deployed = new Set(updated.deploymentGroups.map((group) => group.functionName));
    const previousVersions = new Map([...routing].map(([name, routed]) => [name, routed.primary]));
    const replacedInPlace: string[] = [];
    for (const fn of updated.functions) {
      const routed = routing.get(fn.name);
      if (!routed || deployed.has(fn.name)) continue;
      routed.reset(deps.publish(fn));
      replacedInPlace.push(fn.name);
    }
    alarms.replace(updated.alarms);
    deps.applyIam(updated.iam);
    emit('CloudFormation', 'created', `UPDATE_IN_PROGRESS: ${replacedInPlace.length} functions replaced in place (${replacedInPlace.join(', ')}), ${updated.alarms.length} alarms updated`);

    const outcomes: DeploymentOutcome[] = [];
    for (const group of updated.deploymentGroups) {
      const fn = updated.functions.find((candidate) => candidate.name === group.functionName);
      const routed = routing.get(group.functionName);
      if (!fn || !routed) continue;
      const deploymentId = deps.nextDeploymentId();
      const created = { deploymentId, createTimeMs: deps.metricClock(), deploymentGroupName: group.logicalId };
      deps.codeDeploy.registerDeployment(created);
      const outcome = await runDeployment({
        deploymentId, group, routing: routed, target: deps.publish(fn, {}, version), timeScale: deps.timeScale,
        runHook: (hookName) => deps.runHook(hookName, deploymentId),
        alarmState: (name) => alarms.byName(name),
        onEvent: (event) => options.onEvent?.({ ...event, source: `CodeDeploy ${deploymentId}`, atMs: Date.now() - startedMs }),
      });
      deps.codeDeploy.registerDeployment({ ...created, status: outcome.status });
      outcomes.push(outcome);
      if (outcome.status !== 'Succeeded') break;
    }
    if (outcomes.every((outcome) => outcome.status === 'Succeeded')) {
      deps.committed(updated);
      emit('CloudFormation', 'end', 'UPDATE_COMPLETE');
      return { status: 'UPDATE_COMPLETE', deployments: outcomes, replacedInPlace, notApplied };
    }
    for (const [name, previous] of previousVersions) routing.get(name)?.reset(previous);
    alarms.replace(current.alarms);
    deps.applyIam(current.iam);
    emit('CloudFormation', 'end', `UPDATE_ROLLBACK_COMPLETE: ${previousVersions.size} functions and ${current.alarms.length} alarms back to the previous template`);
    return { status: 'UPDATE_ROLLBACK_COMPLETE', deployments: outcomes, replacedInPlace, notApplied };
  };
}
