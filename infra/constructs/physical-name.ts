import { Aws, Fn } from 'aws-cdk-lib';

/**
 * `<time_low>-<node>`, the first and last groups of the UUID in the stack's id, as a deploy-time
 * token (21 characters, lowercase hex). CloudFormation gives each stack it creates a new,
 * time-based (version 1) UUID: the last group is the generating host's node id, which many stacks
 * share, the first the low 32 bits of the creation time; together they tell stack instances apart.
 * Physical names that end in it are unique per stack *instance*: after a failed first create or a
 * delete with retained resources, the recreated stack gets a new id, so its names never collide
 * with the resources left behind ("already exists").
 * @example `${Names.uniqueResourceName(this, { maxLength: 52 })}-${stackInstanceSuffix()}`
 */
export function stackInstanceSuffix(): string {
  const uuid = Fn.split('-', Fn.select(2, Fn.split('/', Aws.STACK_ID)));
  return `${Fn.select(0, uuid)}-${Fn.select(4, uuid)}`;
}
