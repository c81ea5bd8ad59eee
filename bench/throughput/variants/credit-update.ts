import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { balanceWrite } from '../../../workloads/accounts/jobs/balance-write.ts';

/** The credit every variant applies: the very update the accounts workload's job commits. */
export function creditUpdate(stateTableName: string, accountId: string, amount: number) {
  const { item } = balanceWrite({ stateTableName, accountId, delta: amount, now: new Date().toISOString() });
  if (!item.Update) throw new Error('unreachable: a balance write is an Update');
  return item.Update;
}

export function creditCommand(stateTableName: string, accountId: string, amount: number): UpdateCommand {
  return new UpdateCommand(creditUpdate(stateTableName, accountId, amount));
}
