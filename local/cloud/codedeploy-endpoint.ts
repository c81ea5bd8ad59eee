import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CallAuthorizer } from './lambda-endpoint.ts';
import { listenLocal, readBody, type LocalEndpoint } from '../http.ts';

const TARGET_PREFIX = 'CodeDeploy_20141006.';

/** A lifecycle hook's verdict as the hook reported it. */
export interface HookStatus {
  readonly deploymentId: string;
  readonly lifecycleEventHookExecutionId: string;
  readonly status: string;
}

/** A deployment the endpoint answers `GetDeployment` for. */
export interface LocalDeployment {
  readonly deploymentId: string;
  /** When the deployment was created (the start of its canary window), epoch ms. */
  readonly createTimeMs: number;
  /** @default 'ballast-local' */
  readonly applicationName?: string;
  /** @default 'ballast-local-worker' */
  readonly deploymentGroupName?: string;
  /** @default 'InProgress' */
  readonly status?: string;
}

export interface CodeDeployEndpoint extends LocalEndpoint {
  /** Resolves with the status reported for `executionId`, or rejects after `timeoutMs`. */
  statusOf(executionId: string, timeoutMs: number): Promise<HookStatus>;
  /** Makes `GetDeployment` answer for `deployment.deploymentId` (replacing an earlier one). */
  registerDeployment(deployment: LocalDeployment): void;
}

/**
 * The CodeDeploy calls a lifecycle hook makes (AWS JSON 1.1), so the local cloud can run the
 * stack's hooks the way a deployment does and read their verdicts. Hooks reach it through
 * `AWS_ENDPOINT_URL_CODEDEPLOY`.
 *
 * - `PutLifecycleEventHookExecutionStatus`: recorded, readable with `statusOf`;
 * - `GetDeployment`: answers the deployments registered with `registerDeployment` (`createTime`
 *   in epoch seconds, as CodeDeploy sends it); any other id is `DeploymentDoesNotExistException`.
 *
 * @example
 * const codeDeploy = await serveCodeDeploy();
 * codeDeploy.registerDeployment({ deploymentId: 'd-LOCAL1', createTimeMs: Date.now() });
 */
export async function serveCodeDeploy(port = 0, options: { readonly authorize?: CallAuthorizer; readonly deploymentGroupArn?: (deploymentId: string) => string | undefined } = {}): Promise<CodeDeployEndpoint> {
  const statuses = new Map<string, HookStatus>();
  const waiters = new Map<string, (status: HookStatus) => void>();
  const deployments = new Map<string, LocalDeployment>();
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request);
    const target = String(request.headers['x-amz-target'] ?? '');
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(body || '{}') as Record<string, unknown>;
    } catch {
      return reply(response, 400, { __type: 'SerializationException', message: 'body is not JSON' });
    }
    const operation = target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : target;
    // Both are authorized on the deployment's group, as the hooks' grants name it.
    const group = typeof input.deploymentId === 'string' ? options.deploymentGroupArn?.(input.deploymentId) : undefined;
    if (options.authorize && (operation === 'PutLifecycleEventHookExecutionStatus' || operation === 'GetDeployment')) {
      const refused = await options.authorize(request, { action: `codedeploy:${operation}`, resource: group ?? '*' });
      if (refused) return reply(response, 400, { __type: 'AccessDeniedException', message: refused });
    }
    switch (operation) {
      case 'PutLifecycleEventHookExecutionStatus': {
        const status = input as unknown as HookStatus;
        statuses.set(status.lifecycleEventHookExecutionId, status);
        waiters.get(status.lifecycleEventHookExecutionId)?.(status);
        return reply(response, 200, { lifecycleEventHookExecutionId: status.lifecycleEventHookExecutionId });
      }
      case 'GetDeployment': {
        const id = input.deploymentId;
        if (typeof id !== 'string' || id === '') return reply(response, 400, { __type: 'DeploymentIdRequiredException', message: 'deploymentId is required' });
        const deployment = deployments.get(id);
        if (!deployment) return reply(response, 400, { __type: 'DeploymentDoesNotExistException', message: `deployment ${id} does not exist` });
        return reply(response, 200, { deploymentInfo: deploymentInfo(deployment) });
      }
      default:
        return reply(response, 400, {
          __type: 'UnknownOperationException',
          message: `the local CodeDeploy endpoint only emulates PutLifecycleEventHookExecutionStatus and GetDeployment, not ${target || '(no X-Amz-Target)'}`,
        });
    }
  };
  const endpoint = await listenLocal(handle, port);
  return {
    ...endpoint,
    registerDeployment: (deployment) => {
      if (!deployment.deploymentId || !Number.isFinite(deployment.createTimeMs)) {
        throw new TypeError(`registerDeployment: needs a deploymentId and a finite createTimeMs; got ${JSON.stringify(deployment)}`);
      }
      deployments.set(deployment.deploymentId, deployment);
    },
    statusOf: (executionId, timeoutMs) => {
      const known = statuses.get(executionId);
      if (known) return Promise.resolve(known);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no hook status for ${executionId} within ${timeoutMs} ms`)), timeoutMs);
        waiters.set(executionId, (status) => {
          clearTimeout(timer);
          resolve(status);
        });
      });
    },
  };
}

function deploymentInfo(deployment: LocalDeployment): Record<string, unknown> {
  return {
    deploymentId: deployment.deploymentId,
    applicationName: deployment.applicationName ?? 'ballast-local',
    deploymentGroupName: deployment.deploymentGroupName ?? 'ballast-local-worker',
    status: deployment.status ?? 'InProgress',
    computePlatform: 'Lambda',
    creator: 'user',
    createTime: deployment.createTimeMs / 1000,
  };
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
  response.end(JSON.stringify(body));
}
