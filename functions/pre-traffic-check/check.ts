import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { PutLifecycleEventHookExecutionStatusCommand, type CodeDeployClient } from '@aws-sdk/client-codedeploy';
import type { ReadinessReport } from '../../shared/readiness/index.ts';

/** What CodeDeploy sends a lifecycle hook. */
export interface CodeDeployHookEvent {
  readonly DeploymentId: string;
  readonly LifecycleEventHookExecutionId: string;
}

export interface PreTrafficCheckDependencies {
  readonly lambda: LambdaClient;
  readonly codeDeploy: CodeDeployClient;
  /** ARN of the new version (qualified), the one about to receive traffic. */
  readonly targetVersionArn: string;
  readonly log?: (line: Record<string, unknown>) => void;
}

/**
 * CodeDeploy pre-traffic hook: invokes the new version with a readiness event and reports
 * Succeeded only when it answers ready. Anything else — an error, a timeout, a malformed answer,
 * a failed check — is Failed, and CodeDeploy rolls back before any traffic moves.
 */
export function createPreTrafficCheck(deps: PreTrafficCheckDependencies) {
  const log = deps.log ?? ((line) => console.log(JSON.stringify(line)));
  return async (event: CodeDeployHookEvent): Promise<{ status: 'Succeeded' | 'Failed' }> => {
    let status: 'Succeeded' | 'Failed' = 'Failed';
    try {
      const out = await deps.lambda.send(new InvokeCommand({
        FunctionName: deps.targetVersionArn,
        Payload: Buffer.from(JSON.stringify({ ballastReadiness: true })),
      }));
      const answer = out.Payload ? (JSON.parse(Buffer.from(out.Payload).toString('utf8')) as ReadinessReport) : undefined;
      if (out.FunctionError) log({ level: 'ERROR', message: 'new version failed the readiness invocation', functionError: out.FunctionError, answer });
      else log({ level: answer?.ready ? 'INFO' : 'ERROR', message: 'readiness report', target: deps.targetVersionArn, answer });
      if (!out.FunctionError && answer?.ready === true) status = 'Succeeded';
    } catch (error) {
      log({ level: 'ERROR', message: 'could not ask the new version', error: String(error) });
    }
    await deps.codeDeploy.send(new PutLifecycleEventHookExecutionStatusCommand({
      deploymentId: event.DeploymentId,
      lifecycleEventHookExecutionId: event.LifecycleEventHookExecutionId,
      status,
    }));
    return { status };
  };
}
