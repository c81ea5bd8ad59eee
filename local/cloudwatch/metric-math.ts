import type { Datapoints } from './series.ts';

/** A value of metric math: a number, or a series (period start → value). */
type Value = number | Datapoints;

/** What an expression is evaluated against. */
export interface MathScope {
  /** The series of each metric id the expression names. */
  readonly series: ReadonlyMap<string, Datapoints>;
  /** Every period start of the window, oldest first: what `FILL` fills. */
  readonly timeline: readonly number[];
  /** What `PERIOD(series)` answers: the period of the query, in seconds. @default - PERIOD() is not evaluated */
  readonly periodSeconds?: number;
}

/** An expression the local evaluator does not understand (it says which part). */
export class UnsupportedExpressionError extends Error {}

/**
 * Evaluates a CloudWatch metric math expression over series: numbers, metric ids, `+ - * /`,
 * comparisons (`> >= < <= == !=`, 1 or 0), parentheses, `FILL(series, value)`,
 * `IF(condition, then[, else])` and `PERIOD(series)`: the subset ballast's alarms and dashboard use. As in CloudWatch, an operation
 * on two series keeps the periods both have, a scalar applies to every period, and a division by
 * zero yields no datapoint.
 *
 * @throws UnsupportedExpressionError for anything else, naming it
 */
export function evaluateExpression(expression: string, scope: MathScope): Datapoints {
  const parser = new Parser(tokenize(expression), scope);
  const value = parser.expression();
  parser.end();
  return typeof value === 'number' ? new Map(scope.timeline.map((t) => [t, value])) : value;
}

type Token = { kind: 'number'; value: number } | { kind: 'name'; value: string } | { kind: 'op'; value: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\s*(?:(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(>=|<=|==|!=|[-+*/(),<>]))/y;
  let index = 0;
  while (index < text.length) {
    if (/^\s*$/.test(text.slice(index))) break;
    pattern.lastIndex = index;
    const match = pattern.exec(text);
    if (!match) throw new UnsupportedExpressionError(`metric math: cannot read '${text.slice(index, index + 20)}' in '${text}'`);
    index = pattern.lastIndex;
    if (match[1] !== undefined) tokens.push({ kind: 'number', value: Number(match[1]) });
    else if (match[2] !== undefined) tokens.push({ kind: 'name', value: match[2] });
    else tokens.push({ kind: 'op', value: match[3] as string });
  }
  return tokens;
}

class Parser {
  #at = 0;
  readonly #tokens: Token[];
  readonly #scope: MathScope;

  constructor(tokens: Token[], scope: MathScope) {
    this.#tokens = tokens;
    this.#scope = scope;
  }

  expression(): Value {
    let left = this.#additive();
    const op = this.#peekOp(['>', '>=', '<', '<=', '==', '!=']);
    if (op) {
      this.#at += 1;
      left = combine(left, this.#additive(), (a, b) => (compare(op, a, b) ? 1 : 0));
    }
    return left;
  }

  end(): void {
    if (this.#at < this.#tokens.length) throw new UnsupportedExpressionError(`metric math: unexpected '${describe(this.#tokens[this.#at])}'`);
  }

  #additive(): Value {
    let left = this.#term();
    for (let op = this.#peekOp(['+', '-']); op; op = this.#peekOp(['+', '-'])) {
      this.#at += 1;
      const right = this.#term();
      left = combine(left, right, op === '+' ? (a, b) => a + b : (a, b) => a - b);
    }
    return left;
  }

  #term(): Value {
    let left = this.#unary();
    for (let op = this.#peekOp(['*', '/']); op; op = this.#peekOp(['*', '/'])) {
      this.#at += 1;
      const right = this.#unary();
      left = combine(left, right, op === '*' ? (a, b) => a * b : (a, b) => (b === 0 ? undefined : a / b));
    }
    return left;
  }

  #unary(): Value {
    if (this.#peekOp(['-'])) {
      this.#at += 1;
      return combine(0, this.#unary(), (a, b) => a - b);
    }
    return this.#primary();
  }

  #primary(): Value {
    const token = this.#tokens[this.#at++];
    if (!token) throw new UnsupportedExpressionError('metric math: the expression ends too early');
    if (token.kind === 'number') return token.value;
    if (token.kind === 'op' && token.value === '(') {
      const inner = this.expression();
      this.#expect(')');
      return inner;
    }
    if (token.kind !== 'name') throw new UnsupportedExpressionError(`metric math: unexpected '${token.value}'`);
    if (!this.#peekOp(['('])) {
      const series = this.#scope.series.get(token.value);
      if (!series) throw new UnsupportedExpressionError(`metric math: no metric with id '${token.value}'`);
      return series;
    }
    this.#at += 1;
    const args: Value[] = [];
    if (!this.#peekOp([')'])) {
      for (;;) {
        args.push(this.expression());
        if (!this.#peekOp([','])) break;
        this.#at += 1;
      }
    }
    this.#expect(')');
    return this.#call(token.value, args);
  }

  #call(name: string, args: Value[]): Value {
    if (name === 'PERIOD' && args.length === 1 && this.#scope.periodSeconds !== undefined) return this.#scope.periodSeconds;
    if (name === 'FILL' && args.length === 2 && typeof args[1] === 'number') {
      const [series, fill] = args as [Value, number];
      const values = typeof series === 'number' ? new Map<number, number>() : series;
      return new Map(this.#scope.timeline.map((t) => [t, values.get(t) ?? (typeof series === 'number' ? series : fill)]));
    }
    if (name === 'IF' && (args.length === 2 || args.length === 3)) {
      const [condition, then, otherwise] = args as [Value, Value, Value | undefined];
      const at = (value: Value | undefined, t: number) => (value === undefined ? undefined : typeof value === 'number' ? value : value.get(t));
      const times = typeof condition === 'number' ? this.#scope.timeline : [...condition.keys()];
      const result = new Map<number, number>();
      for (const t of times) {
        const chosen = (at(condition, t) ?? 0) !== 0 ? at(then, t) : at(otherwise, t);
        if (chosen !== undefined) result.set(t, chosen);
      }
      return result;
    }
    throw new UnsupportedExpressionError(`metric math: ${name}() with ${args.length} argument(s) is not evaluated locally`);
  }

  #peekOp(ops: readonly string[]): string | undefined {
    const token = this.#tokens[this.#at];
    return token?.kind === 'op' && ops.includes(token.value) ? token.value : undefined;
  }

  #expect(op: string): void {
    if (!this.#peekOp([op])) throw new UnsupportedExpressionError(`metric math: expected '${op}', got '${describe(this.#tokens[this.#at])}'`);
    this.#at += 1;
  }
}

function combine(left: Value, right: Value, op: (a: number, b: number) => number | undefined): Value {
  if (typeof left === 'number' && typeof right === 'number') return op(left, right) ?? Number.NaN;
  const times = typeof left === 'number' ? [...(right as Datapoints).keys()] : [...left.keys()].filter((t) => typeof right === 'number' || right.has(t));
  const result = new Map<number, number>();
  for (const t of times) {
    const value = op(typeof left === 'number' ? left : (left.get(t) as number), typeof right === 'number' ? right : (right.get(t) as number));
    if (value !== undefined && Number.isFinite(value)) result.set(t, value);
  }
  return result;
}

function compare(op: string, a: number, b: number): boolean {
  switch (op) {
    case '>': return a > b;
    case '>=': return a >= b;
    case '<': return a < b;
    case '<=': return a <= b;
    case '==': return a === b;
    default: return a !== b;
  }
}

function describe(token: Token | undefined): string {
  return token === undefined ? 'the end' : String(token.value);
}
