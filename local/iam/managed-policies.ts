import type { PolicyDocument } from './template.ts';

/**
 * The AWS managed policies the stack's roles attach, as AWS publishes them: a template holds only
 * their ARNs. None grants a DynamoDB, SQS or SNS action, so they change no decision the local cloud
 * makes today; they are here so that a refusal's explanation lists every policy the role has. A
 * role with a managed policy not listed here is named at start (it grants nothing locally).
 */
export const AWS_MANAGED_POLICIES: Readonly<Record<string, PolicyDocument>> = {
  'arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole': {
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'], Resource: '*' }],
  },
  'arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole': {
    Version: '2012-10-17',
    Statement: [{
      Effect: 'Allow',
      Action: [
        'logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents', 'ec2:CreateNetworkInterface', 'ec2:DescribeNetworkInterfaces',
        'ec2:DescribeSubnets', 'ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses',
      ],
      Resource: '*',
    }],
  },
};
