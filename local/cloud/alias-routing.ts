import type { Context } from 'aws-lambda';
import type { FunctionRuntime } from '../lambda/function-runtime.ts';

/** One published version of a function, as the local cloud runs it. */
export interface LocalVersion {
  /** `1`, `2`, ...: what Lambda reports as `ExecutedVersion`. */
  readonly version: string;
  readonly runtime: FunctionRuntime;
}

/**
 * A function's alias with a routing configuration, as Lambda applies it to every invocation of
 * the alias (an event source mapping, a URL): the alias's version takes the traffic, except the
 * share `weight` of the one additional version (`RoutingConfig.AdditionalVersionWeights`), drawn
 * per invocation. A canary deployment moves that weight; promotion makes the additional version
 * the alias's own.
 */
export class AliasRouting {
  #primary: LocalVersion;
  #additional: { readonly target: LocalVersion; weight: number } | undefined;
  readonly #random: () => number;

  constructor(primary: LocalVersion, random: () => number = Math.random) {
    this.#primary = primary;
    this.#random = random;
  }

  /** The version the alias points at. */
  get primary(): LocalVersion {
    return this.#primary;
  }

  /** The additional version and its share of invocations, if any. */
  get additional(): { readonly version: string; readonly weight: number } | undefined {
    return this.#additional ? { version: this.#additional.target.version, weight: this.#additional.weight } : undefined;
  }

  /** Routes `weight` (0–1) of the invocations to `target` (a canary step). */
  route(target: LocalVersion, weight: number): void {
    if (!(weight >= 0 && weight <= 1)) throw new RangeError(`an additional version weight is between 0 and 1, got ${weight}`);
    if (target.version === this.#primary.version) throw new Error(`version ${target.version} is the alias's own version already`);
    this.#additional = { target, weight };
  }

  /** Points the alias at the additional version, with no routing left (the deployment succeeded). Returns the version it replaced. */
  promote(): LocalVersion {
    if (!this.#additional) throw new Error('no additional version to promote');
    const previous = this.#primary;
    this.#primary = this.#additional.target;
    this.#additional = undefined;
    return previous;
  }

  /** Removes the routing: every invocation goes to the alias's version again (a rollback). Returns the version it removed. */
  rollBack(): LocalVersion | undefined {
    const removed = this.#additional?.target;
    this.#additional = undefined;
    return removed;
  }

  /** Points the alias at `version` with no routing left (a rollback after promotion, or a stack update's rollback). */
  reset(version: LocalVersion): void {
    this.#primary = version;
    this.#additional = undefined;
  }

  /** The version one invocation runs on. */
  pick(): LocalVersion {
    const additional = this.#additional;
    return additional && additional.weight > 0 && this.#random() < additional.weight ? additional.target : this.#primary;
  }

  /** An async handler with Lambda's signature that routes each invocation. */
  readonly handler = (event: unknown, context?: Context): Promise<unknown> => this.pick().runtime.handler(event, context);
}

/**
 * Draws for {@link AliasRouting} spread evenly instead of at random (the base-2 van der Corput
 * sequence: 0, 0.5, 0.25, 0.75, 0.125, …): at a weight `w`, every run of invocations sends about
 * the share `w` of them to the additional version, never bunched. A rehearsal's canary runs few
 * invocations (10 % of a minute or two's); drawn at random, the new version's could come in a
 * clump or not at all, and the verdict would depend on the draws rather than on the version.
 */
export function evenDraws(): () => number {
  let n = 0;
  return () => {
    n += 1;
    let value = 0;
    for (let rest = n, unit = 0.5; rest > 0; rest = Math.floor(rest / 2), unit /= 2) value += (rest % 2) * unit;
    return value;
  };
}
