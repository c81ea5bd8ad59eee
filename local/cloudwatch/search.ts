import { UnsupportedExpressionError } from './metric-math.ts';
import type { MetricIdentity, MetricSeries } from './series.ts';

/** One `SEARCH('...', 'Stat', period)` call of a dashboard expression, its arguments parsed. */
export interface SearchCall {
  /** The search expression: `{Namespace,Dim1,Dim2} terms`. */
  readonly query: string;
  readonly stat: string;
  readonly periodSeconds: number;
}

/**
 * The metrics a CloudWatch `SEARCH` finds: those of the schema's namespace whose dimension names
 * are exactly the schema's, matching every term (`Key="value"` on `MetricName`, `Namespace` or a
 * dimension; a bare `"word"` on the name or any dimension value; `( a OR b )` groups). Ballast's
 * dashboard uses exact matches only, so partial-token matching is not emulated.
 *
 * @throws UnsupportedExpressionError naming what it could not read
 */
export function searchMetrics(series: MetricSeries, query: string): MetricIdentity[] {
  const schema = /^\s*\{([^}]*)\}\s*(.*)$/s.exec(query);
  if (!schema) throw new UnsupportedExpressionError(`SEARCH without a {Namespace,dimensions} schema is not evaluated locally: ${query}`);
  const [namespace, ...dimensionNames] = (schema[1] as string).split(',').map(unquote);
  if (!namespace) throw new UnsupportedExpressionError(`SEARCH schema names no namespace: ${query}`);
  const wanted = [...dimensionNames].sort().join('\u0000');
  const clauses = parseTerms(schema[2] as string, query);
  return series.identitiesIn(namespace)
    .filter((identity) => Object.keys(identity.dimensions).sort().join('\u0000') === wanted)
    .filter((identity) => clauses.every((anyOf) => anyOf.some((term) => matches(identity, term))));
}

/**
 * The `SEARCH(...)` calls in an expression, with where each starts and ends, so a caller can put
 * a series in their place. Strings are single-quoted, as CloudWatch writes them.
 */
export function searchCalls(expression: string): { readonly start: number; readonly end: number; readonly call: SearchCall }[] {
  const found = [];
  const pattern = /SEARCH\s*\(\s*'((?:[^'\\]|\\.)*)'\s*,\s*'([^']+)'\s*,\s*(\d+)\s*\)/g;
  for (let match = pattern.exec(expression); match; match = pattern.exec(expression)) {
    found.push({
      start: match.index, end: match.index + match[0].length,
      call: { query: (match[1] as string).replace(/\\(.)/g, '$1'), stat: match[2] as string, periodSeconds: Number(match[3]) },
    });
  }
  return found;
}

interface Term {
  /** `MetricName`, `Namespace`, a dimension name, or undefined for a bare word. */
  readonly key?: string;
  readonly value: string;
}

/** Terms as an AND of ORs. */
function parseTerms(text: string, query: string): Term[][] {
  const tokens = text.match(/"(?:[^"\\]|\\.)*"(?:\s*=\s*(?:"(?:[^"\\]|\\.)*"|[^\s()]+))?|[^\s()="]+(?:\s*=\s*(?:"(?:[^"\\]|\\.)*"|[^\s()]+))?|[()]/g) ?? [];
  const clauses: Term[][] = [];
  let group: Term[] | undefined;
  for (const token of tokens) {
    if (token === '(') {
      if (group) throw new UnsupportedExpressionError(`nested groups in SEARCH are not evaluated locally: ${query}`);
      group = [];
    } else if (token === ')') {
      if (!group) throw new UnsupportedExpressionError(`unbalanced ')' in SEARCH: ${query}`);
      clauses.push(group);
      group = undefined;
    } else if (token.toUpperCase() === 'OR') {
      if (!group) throw new UnsupportedExpressionError(`OR outside parentheses in SEARCH is not evaluated locally: ${query}`);
    } else if (token.toUpperCase() !== 'AND') {
      const term = parseTerm(token);
      if (group) group.push(term);
      else clauses.push([term]);
    }
  }
  if (group) throw new UnsupportedExpressionError(`unbalanced '(' in SEARCH: ${query}`);
  return clauses;
}

function parseTerm(token: string): Term {
  const equals = /^("(?:[^"\\]|\\.)*"|[^=\s]+)\s*=\s*(.+)$/.exec(token);
  return equals ? { key: unquote(equals[1] as string), value: unquote(equals[2] as string) } : { value: unquote(token) };
}

function matches(identity: MetricIdentity, term: Term): boolean {
  if (term.key === 'MetricName') return identity.name === term.value;
  if (term.key === 'Namespace') return identity.namespace === term.value;
  if (term.key !== undefined) return identity.dimensions[term.key] === term.value;
  return identity.name === term.value || Object.values(identity.dimensions).includes(term.value);
}

function unquote(text: string): string {
  const trimmed = text.trim();
  return trimmed.startsWith('"') && trimmed.endsWith('"') ? trimmed.slice(1, -1).replace(/\\(.)/g, '$1') : trimmed;
}
