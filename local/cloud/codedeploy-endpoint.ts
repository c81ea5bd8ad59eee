import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenLocal, readBody, type LocalEndpoint } from '../http.ts';

const TARGET = 'CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus';

/** A lifecycle hook's verdict as the hook reported it. */
export interface HookStatus {
  readonly deploymentId: string;
  readonly lifecycleEventHookExecutionId: string;
  readonly status: string;
}

export interface CodeDeployEndpoint extends LocalEndpoint {
  /** Resolves with the status reported for `executionId`, or rejects after `timeoutMs`. */
  statusOf(executionId: string, timeoutMs: number): Promise<HookStatus>;
}

/**
 * The one CodeDeploy call a lifecycle hook makes, `PutLifecycleEventHookExecutionStatus` (AWS JSON
 * 1.1), recorded so the local cloud can run the stack's pre-traffic hooks the way a deployment
 * does and read their verdicts. Hooks reach it through `AWS_ENDPOINT_URL_CODEDEPLOY`.
 */
export async function serveCodeDeploy(port = 0): Promise<CodeDeployEndpoint> {
  const statuses = new Map<string, HookStatus>();
  const waiters = new Map<string, (status: HookStatus) => void>();
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const body = await readBody(request);
    if (request.headers['x-amz-target'] !== TARGET) {
      response.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(JSON.stringify({ __type: 'UnknownOperationException', message: 'only PutLifecycleEventHookExecutionStatus is emulated' }));
      return;
    }
    const status = JSON.parse(body || '{}') as HookStatus;
    statuses.set(status.lifecycleEventHookExecutionId, status);
    waiters.get(status.lifecycleEventHookExecutionId)?.(status);
    response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
    response.end(JSON.stringify({ lifecycleEventHookExecutionId: status.lifecycleEventHookExecutionId }));
  };
  const endpoint = await listenLocal(handle, port);
  return {
    ...endpoint,
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
