import { alarmDefinition, evaluateAlarm, type AlarmDefinition, type AlarmState } from './alarms.ts';
import type { MetricSeries } from './series.ts';

/** One alarm as `DescribeAlarms`, `ballast status` and the console see it. */
export interface AlarmStatus {
  readonly logicalId: string;
  readonly name: string;
  readonly state: AlarmState;
  readonly reason: string;
  /** Epoch ms of the last state change (the start, before any). */
  readonly changedAtMs: number;
}

/** A state change, as it is printed. */
export interface AlarmTransition {
  readonly name: string;
  readonly from: AlarmState;
  readonly to: AlarmState;
  readonly reason: string;
}

/** A state change with when it happened: one entry of an alarm's history. */
export interface AlarmHistoryItem extends AlarmTransition {
  /** Epoch ms on the alarms' clock. */
  readonly atMs: number;
}

/** An alarm's action (its notification), as its history records it. */
export interface AlarmAction {
  readonly name: string;
  readonly summary: string;
  readonly succeeded: boolean;
  /** Epoch ms on the alarms' clock. */
  readonly atMs: number;
}

/** Most history items kept (CloudWatch keeps 14 days; a local run needs the recent ones). */
const HISTORY_LIMIT = 500;

export interface LocalAlarmsOptions {
  /** The template's alarms (`LocalResources.alarms`). */
  readonly alarms: readonly ({ readonly logicalId: string; readonly properties: Readonly<Record<string, unknown>> } | { readonly logicalId: string; readonly unresolved: string })[];
  readonly series: MetricSeries;
  /** How often every alarm is evaluated. @default 10_000 */
  readonly intervalMs?: number;
  readonly onTransition?: (transition: AlarmTransition) => void;
  /** @default Date.now */
  readonly nowMs?: () => number;
}

/**
 * The stack's own CloudWatch alarms, evaluated locally and continuously against the local
 * metrics, as CloudWatch evaluates them (see `evaluateAlarm`). An alarm whose metrics cannot be
 * resolved or computed locally stays INSUFFICIENT_DATA with the reason.
 */
export class LocalAlarms {
  #definitions: { readonly logicalId: string; readonly definition?: AlarmDefinition; readonly unresolved?: string }[] = [];
  #statuses = new Map<string, AlarmStatus>();
  readonly #history: AlarmHistoryItem[] = [];
  readonly #actions: AlarmAction[] = [];
  readonly #options: LocalAlarmsOptions;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: LocalAlarmsOptions) {
    this.#options = options;
    this.replace(options.alarms);
  }

  /**
   * Replaces the alarm definitions, as a stack update does: an alarm that stays (same logical id
   * and name) keeps its state until its next evaluation under the new definition; a new one starts
   * INSUFFICIENT_DATA; one the template no longer has is deleted.
   */
  replace(alarms: LocalAlarmsOptions['alarms']): void {
    const now = (this.#options.nowMs ?? Date.now)();
    this.#definitions = alarms.map((alarm) => ('unresolved' in alarm
      ? { logicalId: alarm.logicalId, unresolved: alarm.unresolved }
      : { logicalId: alarm.logicalId, definition: alarmDefinition(alarm.logicalId, alarm.properties) }));
    const statuses = new Map<string, AlarmStatus>();
    for (const { logicalId, definition, unresolved } of this.#definitions) {
      const name = definition?.name ?? logicalId;
      const kept = this.#statuses.get(logicalId);
      statuses.set(logicalId, kept?.name === name && !unresolved ? kept : {
        logicalId, name, state: 'INSUFFICIENT_DATA', changedAtMs: now,
        reason: unresolved ? `not evaluated locally: ${unresolved}` : 'not evaluated yet',
      });
    }
    this.#statuses = statuses;
  }

  /** One alarm's status by name, or undefined when the stack has no such alarm. */
  byName(name: string): AlarmStatus | undefined {
    return [...this.#statuses.values()].find((status) => status.name === name);
  }

  /** Evaluates every alarm now; returns the transitions (also given to `onTransition`). */
  evaluate(): AlarmTransition[] {
    const now = (this.#options.nowMs ?? Date.now)();
    const transitions: AlarmTransition[] = [];
    for (const { logicalId, definition } of this.#definitions) {
      const previous = this.#statuses.get(logicalId) as AlarmStatus;
      if (!definition) continue;
      const { state, reason } = evaluateAlarm(definition, this.#options.series, now, previous.state);
      const changed = state !== previous.state;
      this.#statuses.set(logicalId, { ...previous, state, reason, changedAtMs: changed ? now : previous.changedAtMs });
      // The first evaluation settling every quiet alarm to OK is not news; an ALARM always is.
      const first = previous.reason === 'not evaluated yet';
      if (changed && (!first || state === 'ALARM')) {
        const transition = { name: previous.name, from: previous.state, to: state, reason };
        transitions.push(transition);
        this.#history.push({ ...transition, atMs: now });
        if (this.#history.length > HISTORY_LIMIT) this.#history.splice(0, this.#history.length - HISTORY_LIMIT);
        this.#options.onTransition?.(transition);
      }
    }
    return transitions;
  }

  /** Evaluates every `intervalMs` until {@link stop}. */
  start(): this {
    this.evaluate();
    this.#timer ??= setInterval(() => this.evaluate(), this.#options.intervalMs ?? 10_000);
    this.#timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The state changes so far (the first quiet settling to OK excepted), oldest first: `DescribeAlarmHistory`. */
  history(): readonly AlarmHistoryItem[] {
    return [...this.#history];
  }

  /**
   * An action of `name`'s (a notification to its topic), executed or failed (the topic refused
   * it): an `Action` item of its history, which on AWS is the only trace of a notification that
   * never went out.
   */
  recordAction(name: string, summary: string, succeeded: boolean): void {
    this.#actions.push({ name, summary, succeeded, atMs: this.#options.nowMs?.() ?? Date.now() });
    if (this.#actions.length > HISTORY_LIMIT) this.#actions.splice(0, this.#actions.length - HISTORY_LIMIT);
  }

  /** The alarms' actions so far, oldest first. */
  actions(): readonly AlarmAction[] {
    return [...this.#actions];
  }

  /** The failed ones. */
  actionFailures(): readonly AlarmAction[] {
    return this.#actions.filter((action) => !action.succeeded);
  }

  /** Every alarm's current status, in template order. */
  statuses(): AlarmStatus[] {
    return [...this.#statuses.values()];
  }
}
