import { createHash } from 'node:crypto';
import { LOCAL_REGION } from '../engines/index.ts';

/** The local values a template's references and attributes resolve to. */
export interface ResolutionContext {
  readonly stackName: string;
  readonly accountId: string;
  /** `Ref` of each logical id. */
  readonly refs: ReadonlyMap<string, unknown>;
  /** `Fn::GetAtt` of each logical id, by attribute name (e.g. `Arn`, `StreamArn`, `Endpoint.Address`). */
  readonly attributes: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
}

/** A reference the local cloud has no value for. */
export class UnresolvableError extends Error {}

/**
 * Resolves CloudFormation intrinsic functions (`Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Select`,
 * `Fn::Split`, `Fn::Sub`) and pseudo parameters against local values. A reference to something
 * the local cloud did not create throws, naming it, rather than leaving a token in a function's
 * environment.
 */
export function resolve(value: unknown, context: ResolutionContext, path = '$'): unknown {
  if (Array.isArray(value)) return value.map((item, i) => resolve(item, context, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length !== 1 || !entries[0]?.[0].startsWith('Fn::') && entries[0]?.[0] !== 'Ref') {
    return Object.fromEntries(entries.map(([key, inner]) => [key, resolve(inner, context, `${path}.${key}`)]));
  }
  const [fn, args] = entries[0] as [string, unknown];
  switch (fn) {
    case 'Ref':
      return ref(String(args), context, path);
    case 'Fn::GetAtt': {
      const [id, attribute] = Array.isArray(args) ? (args as string[]) : String(args).split(/\.(.+)/);
      return getAtt(String(id), String(attribute), context, path);
    }
    case 'Fn::Join': {
      const [separator, list] = args as [string, unknown[]];
      return (resolve(list, context, path) as unknown[]).join(separator);
    }
    case 'Fn::Select': {
      const [index, list] = args as [unknown, unknown];
      return (resolve(list, context, path) as unknown[])[Number(resolve(index, context, path))];
    }
    case 'Fn::Split': {
      const [separator, source] = args as [string, unknown];
      return String(resolve(source, context, path)).split(separator);
    }
    case 'Fn::Sub': {
      const [text, variables] = Array.isArray(args) ? (args as [string, Record<string, unknown>]) : [String(args), {}];
      return text.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
        if (name in variables) return String(resolve(variables[name], context, path));
        const [id, attribute] = name.split(/\.(.+)/);
        return String(attribute ? getAtt(String(id), attribute, context, path) : ref(String(id), context, path));
      });
    }
    default:
      throw new UnresolvableError(`${path}: ${fn} is not supported by the local cloud`);
  }
}

function ref(id: string, context: ResolutionContext, path: string): unknown {
  switch (id) {
    case 'AWS::Region': return LOCAL_REGION;
    case 'AWS::AccountId': return context.accountId;
    case 'AWS::Partition': return 'aws';
    case 'AWS::URLSuffix': return 'amazonaws.com';
    case 'AWS::StackName': return context.stackName;
    case 'AWS::StackId': return localStackId(context);
    case 'AWS::NoValue': return undefined;
  }
  if (!context.refs.has(id)) throw new UnresolvableError(`${path}: Ref ${id} — the local cloud did not create ${id}`);
  return context.refs.get(id);
}

/**
 * A stack id shaped like CloudFormation's (`arn:…:stack/<name>/<uuid>`), derived from the stack's
 * name so a restarted local cloud resolves the same physical names (which end in part of the id).
 */
export function localStackId(context: Pick<ResolutionContext, 'stackName' | 'accountId'>): string {
  return `arn:aws:cloudformation:${LOCAL_REGION}:${context.accountId}:stack/${context.stackName}/${localUuid(context.stackName)}`;
}

/**
 * A UUID-shaped id derived from `seed`, for ids AWS generates (a stack's, an event source
 * mapping's): the same on every start, so names and metric dimensions built on it stay put.
 */
export function localUuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function getAtt(id: string, attribute: string, context: ResolutionContext, path: string): unknown {
  const value = context.attributes.get(id)?.[attribute];
  if (value === undefined) throw new UnresolvableError(`${path}: Fn::GetAtt ${id}.${attribute} — the local cloud has no value for it`);
  return value;
}
