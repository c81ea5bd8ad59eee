import type { AliasRouting, LocalVersion } from '../cloud/alias-routing.ts';
import type { LocalDeploymentGroup } from '../cloud/provision.ts';
import { trafficSteps } from './traffic.ts';

/** A CodeDeploy deployment's end, as `GetDeployment` reports it. */
export type DeploymentStatus = 'Succeeded' | 'Failed' | 'Stopped';

/** One thing the deployment did or saw, in the order it happened. */
export interface DeploymentEvent {
  /** Milliseconds since the deployment started (real time). */
  readonly atMs: number;
  readonly kind: 'created' | 'hook' | 'shift' | 'alarm' | 'rollback' | 'end';
  readonly message: string;
}

export interface DeploymentOutcome {
  readonly deploymentId: string;
  readonly status: DeploymentStatus;
  /** Whether traffic went back to the previous version. */
  readonly rolledBack: boolean;
  /** What decided: the hook or alarm that stopped it, or "every step held with no alarm". */
  readonly reason: string;
  /** The alarm that stopped the deployment, if one did. */
  readonly alarm?: string;
  /** The hook that failed it, if one did. */
  readonly hook?: string;
  /** The new version's largest share of the traffic while it ran (0 when the pre-traffic hook failed). */
  readonly maxWeight: number;
  readonly events: readonly DeploymentEvent[];
}

export interface DeploymentOptions {
  readonly deploymentId: string;
  readonly group: LocalDeploymentGroup;
  /** The alias being deployed; its current version is what a rollback returns to. */
  readonly routing: AliasRouting;
  readonly target: LocalVersion;
  /** Runs a lifecycle hook (the hook function, invoked as CodeDeploy invokes it) and resolves with the status it reported. */
  runHook(hookFunctionName: string, lifecycleEvent: 'BeforeAllowTraffic' | 'AfterAllowTraffic'): Promise<'Succeeded' | 'Failed'>;
  /** The current state of an alarm by name; undefined for an alarm the stack does not have. */
  alarmState(name: string): { readonly state: string; readonly reason: string } | undefined;
  /** Deployment time runs this many times faster than real time (a 5-minute canary at 60 is 5 s). @default 1 */
  readonly timeScale?: number;
  /** How often the rollback alarms are read, in real time. @default 1000 or a tenth of a step, whichever is shorter */
  readonly alarmPollMs?: number;
  readonly onEvent?: (event: DeploymentEvent) => void;
}

/**
 * One CodeDeploy deployment of a Lambda alias, as CodeDeploy runs it: the BeforeAllowTraffic hook,
 * then the config's traffic steps (the alias's routing config moving the new version's weight),
 * each held for its interval while the group's alarms are watched, then the alias pointed at the
 * new version and the AfterAllowTraffic hook. A failed hook fails the deployment and an alarm in
 * ALARM stops it; either rolls the traffic back to the previous version when the group's
 * `AutoRollbackConfiguration` names that event.
 */
export async function runDeployment(options: DeploymentOptions): Promise<DeploymentOutcome> {
  const { group, routing, target } = options;
  const scale = options.timeScale ?? 1;
  const startedMs = Date.now();
  const previous = routing.primary;
  const events: DeploymentEvent[] = [];
  const event = (kind: DeploymentEvent['kind'], message: string) => {
    const entry = { atMs: Date.now() - startedMs, kind, message };
    events.push(entry);
    options.onEvent?.(entry);
  };
  const steps = trafficSteps(group.routing);
  let maxWeight = 0;
  const end = (status: DeploymentStatus, reason: string, rollbackEvent?: string, decided: { alarm?: string; hook?: string } = {}): DeploymentOutcome => {
    let rolledBack = false;
    if (rollbackEvent && group.autoRollbackEvents.includes(rollbackEvent)) {
      routing.reset(previous);
      rolledBack = true;
      event('rollback', `${rollbackEvent}: alias ${group.aliasName} back to version ${previous.version}, no traffic on version ${target.version}`);
    } else if (rollbackEvent) {
      event('rollback', `no automatic rollback: AutoRollbackConfiguration does not name ${rollbackEvent}; traffic stays where it is`);
    }
    event('end', `deployment ${status}: ${reason}`);
    return { deploymentId: options.deploymentId, status, rolledBack, reason, maxWeight, events, ...decided };
  };
  const firing = () => {
    for (const name of group.alarms) {
      const alarm = options.alarmState(name);
      if (alarm?.state === 'ALARM') return { name, reason: alarm.reason };
    }
    return undefined;
  };
  const hook = async (name: string | undefined, lifecycleEvent: 'BeforeAllowTraffic' | 'AfterAllowTraffic') => {
    if (!name) return 'Succeeded' as const;
    event('hook', `${lifecycleEvent}: invoking ${name}`);
    const status = await options.runHook(name, lifecycleEvent).catch(() => 'Failed' as const);
    event('hook', `${lifecycleEvent}: ${name} reported ${status}`);
    return status;
  };

  event('created', `deployment ${options.deploymentId} of ${group.functionName}:${group.aliasName}, version ${previous.version} → ${target.version}, `
    + `${group.configName} (${steps.map((step) => `${Math.round(step.weight * 100)} %${step.holdMinutes ? ` for ${step.holdMinutes} min` : ''}`).join(', then ')}), `
    + `watching ${group.alarms.length} alarms${scale > 1 ? `, time × ${scale}` : ''}`);
  const missing = group.alarms.filter((name) => !options.alarmState(name));
  if (missing.length > 0) return end('Failed', `the deployment group names alarms the stack does not have: ${missing.join(', ')}`, 'DEPLOYMENT_FAILURE');

  const before = await hook(group.beforeAllowTrafficHook, 'BeforeAllowTraffic');
  if (before !== 'Succeeded') {
    return end('Failed', `BeforeAllowTraffic hook ${group.beforeAllowTrafficHook} reported ${before}: no traffic was shifted`, 'DEPLOYMENT_FAILURE', { hook: group.beforeAllowTrafficHook });
  }
  for (const step of steps) {
    const alarm = firing();
    if (alarm) return end('Stopped', `alarm ${alarm.name} is in ALARM (${alarm.reason})`, 'DEPLOYMENT_STOP_ON_ALARM', { alarm: alarm.name });
    maxWeight = Math.max(maxWeight, step.weight);
    if (step.weight >= 1) {
      routing.route(target, 1);
      routing.promote();
      event('shift', `AllowTraffic: 100 % → version ${target.version}; alias ${group.aliasName} now points at it`);
      break;
    }
    routing.route(target, step.weight);
    event('shift', `AllowTraffic: ${Math.round(step.weight * 100)} % → version ${target.version} for ${step.holdMinutes} min`);
    const holdMs = (step.holdMinutes * 60_000) / scale;
    const pollMs = options.alarmPollMs ?? Math.max(50, Math.min(1_000, holdMs / 10));
    const holdEndMs = Date.now() + holdMs;
    // Bounded by the hold's length: one read per poll interval.
    for (let reads = 0; Date.now() < holdEndMs && reads <= Math.ceil(holdMs / pollMs); reads += 1) {
      const during = firing();
      if (during) {
        event('alarm', `${during.name} → ALARM at ${Math.round(step.weight * 100)} %: ${during.reason}`);
        return end('Stopped', `alarm ${during.name} went into ALARM during the ${Math.round(step.weight * 100)} % step (${during.reason})`,
          'DEPLOYMENT_STOP_ON_ALARM', { alarm: during.name });
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, Math.max(0, holdEndMs - Date.now()))));
    }
  }
  const after = await hook(group.afterAllowTrafficHook, 'AfterAllowTraffic');
  if (after !== 'Succeeded') {
    return end('Failed', `AfterAllowTraffic hook ${group.afterAllowTrafficHook} reported ${after}`, 'DEPLOYMENT_FAILURE', { hook: group.afterAllowTrafficHook });
  }
  const late = firing();
  if (late) return end('Stopped', `alarm ${late.name} is in ALARM (${late.reason})`, 'DEPLOYMENT_STOP_ON_ALARM', { alarm: late.name });
  return end('Succeeded', `every step held with no alarm of ${group.alarms.length} in ALARM${group.afterAllowTrafficHook ? `, and ${group.afterAllowTrafficHook} reported Succeeded` : ''}`);
}
