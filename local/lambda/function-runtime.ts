import { Worker } from 'node:worker_threads';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import type { Context } from 'aws-lambda';
import type { InvokeMessage, ResultMessage, SandboxInit, SpansMessage } from './sandbox-host.ts';
import type { SpanRecord } from '../../shared/operations/trace-model.ts';

/** Faults the local cloud can inject into a function's invocations (tests and `npm start` flags). */
export interface FunctionFaults {
  /** Fraction (0–1) of invocations that complete their work, then "crash" before returning. */
  crashAfterWorkRate?: number;
  /** Fraction (0–1) of invocations delayed past the function timeout (and so killed). */
  delayPastTimeoutRate?: number;
  /** Fraction (0–1) of invocations whose sandbox dies before the handler runs (no effect at all). */
  crashBeforeWorkRate?: number;
  /**
   * Fraction (0–1) of invocations whose sandbox is killed while the handler runs, at a moment
   * drawn on a log scale between 1 ms and the deadline (see {@link crashMomentMs}): between any two
   * of its requests (after a claim, during an external call, after it returned, with a heartbeat
   * or a commit in flight), as an out-of-memory kill or a host failure would. An invocation that
   * finishes before the drawn moment is not crashed, so fewer crash than the rate says: the chaos
   * report counts those that did.
   */
  crashDuringWorkRate?: number;
}

/**
 * When a mid-work crash strikes, `u` being a uniform draw in [0, 1): log-uniform from 1 ms to the
 * time left, as likely in the first 10 ms (a batch's claims) as between 100 ms and 1 s, and up to
 * the deadline, so a long invocation (a lock wait, a slow external call, heartbeats) can die late
 * in its work too, not only in its first moments.
 */
export function crashMomentMs(u: number, remainingMs: number): number {
  return Math.exp(u * Math.log(Math.max(1, remainingMs)));
}

export interface FunctionRuntimeOptions {
  readonly functionName: string;
  /** Bundled entry file (e.g. `<asset>/index.mjs`) and its exported handler name. */
  readonly file: string;
  readonly exportName: string;
  readonly timeoutMs: number;
  /** @default 128 */
  readonly memoryLimitInMB?: number;
  /** The function's environment: the whole `process.env` its sandboxes see. */
  readonly environment: Record<string, string>;
  /**
   * Sandboxes kept at most; more concurrent invocations wait for one.
   * @default 10
   */
  readonly maxSandboxes?: number;
  /** Receives every line a sandbox writes (its logs and EMF metrics). */
  readonly onOutput?: (line: string, functionName: string) => void;
  /** Mutable so a running cloud can turn faults on and off. @default {} */
  readonly faults?: FunctionFaults;
  /**
   * The spans a sandbox finished, when the function's environment has the OpenTelemetry layer's
   * `AWS_LAMBDA_EXEC_WRAPPER` (see `local/tracing/sandbox.ts`): an invocation's arrive before its
   * result. @default - dropped
   */
  readonly onSpans?: (spans: readonly SpanRecord[], functionName: string) => void;
  /** After every invocation that reached a sandbox: what Lambda's own metrics of it need. */
  readonly onInvoked?: (report: InvocationReport) => void;
  /** @default Math.random */
  readonly random?: () => number;
  /** How much of a cold start's Init is not charged to the invocation's timeout. @default INIT_PHASE_LIMIT_MS */
  readonly initPhaseLimitMs?: number;
}

/**
 * How long a cold start's Init phase (the runtime's bootstrap and the function's static code) may
 * take before the invoke phase starts: Lambda gives Init its own 10 s, and the function timeout
 * counts the invoke phase only. An Init that takes longer is retried inside the invocation, under
 * the function timeout.
 */
export const INIT_PHASE_LIMIT_MS = 10_000;

/** One invocation that reached a sandbox, as Lambda's own metrics see it. */
export interface InvocationReport {
  readonly functionName: string;
  readonly durationMs: number;
  /** How it failed, if it did. */
  readonly error?: InvocationError;
  /** This runtime's sandboxes busy when the invocation got its own, itself included. */
  readonly busySandboxes: number;
}

/** Thrown to the caller when an invocation failed the way Lambda reports it (timeout, crash). */
export class InvocationError extends Error {
  readonly errorType: 'Timeout' | 'Runtime.ExitError' | 'Handler';

  constructor(errorType: 'Timeout' | 'Runtime.ExitError' | 'Handler', message: string) {
    super(message);
    this.errorType = errorType;
    this.name = `Lambda.${errorType}`;
  }
}

interface Sandbox {
  readonly worker: Worker;
  readonly ready: Promise<void>;
  busy: boolean;
  /** How long its Init took (start to ready), once it is ready. */
  initMs: number;
}

/**
 * Lambda's execution model for one function, on worker threads: each sandbox is a thread with the
 * function's own environment, created on demand (cold start), reused while warm, serving one
 * invocation at a time, and killed — not just abandoned — when an invocation times out or
 * crashes, so nothing of it runs on (no heartbeats, no late writes) after Lambda would have
 * stopped it.
 */
export class FunctionRuntime {
  readonly options: FunctionRuntimeOptions;
  readonly #idle: Sandbox[] = [];
  readonly #all = new Set<Sandbox>();
  readonly #waiting: ((acquired: { sandbox: Sandbox; cold: boolean }) => void)[] = [];
  #nextId = 1;
  #stopped = false;
  coldStarts = 0;

  constructor(options: FunctionRuntimeOptions) {
    this.options = options;
  }

  /** An async handler with Lambda's signature, for event source mappings and function URLs. */
  readonly handler = (event: unknown, context?: Context): Promise<unknown> =>
    this.invoke(event, context ? context.getRemainingTimeInMillis() : this.options.timeoutMs);

  /** Invokes the function with `event`; rejects with {@link InvocationError} as Lambda would report. */
  async invoke(event: unknown, timeoutMs = this.options.timeoutMs): Promise<unknown> {
    if (this.#stopped) throw new InvocationError('Runtime.ExitError', `${this.options.functionName} is stopped`);
    const { sandbox, cold } = await this.#acquire();
    const busySandboxes = this.busySandboxes;
    const startedMs = Date.now();
    // Lambda's function timeout runs from the invoke phase: not while an invocation waits for a free
    // sandbox (that is concurrency, not the function's time), nor during a cold start's Init — except
    // the part of Init past its limit, which Lambda retries inside the invocation.
    const initOverrunMs = cold ? Math.max(0, sandbox.initMs - (this.options.initPhaseLimitMs ?? INIT_PHASE_LIMIT_MS)) : 0;
    const deadlineMs = startedMs + timeoutMs - initOverrunMs;
    const report = (error?: unknown) => this.options.onInvoked?.({
      functionName: this.options.functionName, durationMs: Date.now() - startedMs, busySandboxes,
      ...(error instanceof InvocationError ? { error } : {}),
    });
    try {
      const response = await this.#run(sandbox, event, timeoutMs, deadlineMs);
      report();
      return response;
    } catch (error) {
      report(error);
      throw error;
    }
  }

  async #run(sandbox: Sandbox, event: unknown, timeoutMs: number, deadlineMs: number): Promise<unknown> {
    const faults = this.options.faults ?? {};
    const random = this.options.random ?? Math.random;
    const crashBefore = random() < (faults.crashBeforeWorkRate ?? 0);
    const crash = random() < (faults.crashAfterWorkRate ?? 0);
    const delay = random() < (faults.delayPastTimeoutRate ?? 0);
    const crashDuringMs = random() < (faults.crashDuringWorkRate ?? 0) ? crashMomentMs(random(), deadlineMs - Date.now()) : undefined;
    if (crashBefore) {
      await this.#kill(sandbox);
      throw new InvocationError('Runtime.ExitError', 'injected crash before the handler ran');
    }
    if (deadlineMs <= Date.now()) {
      // An Init that overran its limit used up the whole timeout: the handler never starts.
      await this.#kill(sandbox);
      throw new InvocationError('Timeout', `Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds (Init took ${(sandbox.initMs / 1000).toFixed(2)} seconds)`);
    }
    const id = this.#nextId++;
    const message: InvokeMessage = {
      id, event, deadlineMs, awsRequestId: randomUUID(), ...(delay ? { delayMs: timeoutMs + 1_000 } : {}),
    };
    try {
      const result = await new Promise<ResultMessage>((resolve, reject) => {
        const settle = () => {
          clearTimeout(timer);
          clearTimeout(killer);
          sandbox.worker.off('message', onMessage);
          sandbox.worker.off('error', onError);
        };
        const timer = setTimeout(() => {
          settle();
          reject(new InvocationError('Timeout', `Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`));
        }, Math.max(0, deadlineMs - Date.now()));
        // The sandbox is terminated below (the catch kills it): whatever the handler had in flight is cut off there.
        const killer = crashDuringMs === undefined ? undefined : setTimeout(() => {
          settle();
          reject(new InvocationError('Runtime.ExitError', `injected crash during the handler, ${Math.round(crashDuringMs)} ms in`));
        }, crashDuringMs);
        const onMessage = (reply: ResultMessage) => {
          if (reply.id !== id) return;
          settle();
          resolve(reply);
        };
        const onError = (error: Error) => {
          settle();
          reject(new InvocationError('Runtime.ExitError', `sandbox failed: ${error.message}`));
        };
        sandbox.worker.on('message', onMessage);
        sandbox.worker.on('error', onError);
        try {
          sandbox.worker.postMessage(message);
        } catch (error) {
          // An event that cannot be cloned: no timer or listener may outlive the invocation.
          settle();
          reject(error);
        }
      });
      if (crash) throw new InvocationError('Runtime.ExitError', 'injected crash after the handler finished, before it returned');
      this.#release(sandbox);
      if (!result.ok) throw Object.assign(new InvocationError('Handler', result.error.message), { cause: result.error });
      return result.response;
    } catch (error) {
      if (error instanceof InvocationError && error.errorType === 'Handler') throw error;
      await this.#kill(sandbox);
      throw error;
    }
  }

  /** Sandboxes serving an invocation now (or starting for one): the runtime's concurrent executions. */
  get busySandboxes(): number {
    return [...this.#all].filter((sandbox) => sandbox.busy).length;
  }

  /** Terminates every sandbox; in-flight invocations fail. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all([...this.#all].map((sandbox) => this.#kill(sandbox)));
  }

  /** A sandbox for one invocation; `cold` when it was started for it (or for the invocation it replaced). */
  async #acquire(): Promise<{ sandbox: Sandbox; cold: boolean }> {
    const idle = this.#idle.pop();
    if (idle) {
      idle.busy = true;
      return { sandbox: idle, cold: false };
    }
    if (this.#all.size < (this.options.maxSandboxes ?? 10)) {
      const sandbox = this.#start();
      sandbox.busy = true;
      await sandbox.ready;
      return { sandbox, cold: true };
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #release(sandbox: Sandbox): void {
    const next = this.#waiting.shift();
    if (next) return next({ sandbox, cold: false });
    sandbox.busy = false;
    this.#idle.push(sandbox);
  }

  #start(): Sandbox {
    this.coldStarts += 1;
    const init: SandboxInit = {
      file: this.options.file,
      exportName: this.options.exportName,
      functionName: this.options.functionName,
      memoryLimitInMB: this.options.memoryLimitInMB ?? 128,
    };
    const worker = new Worker(new URL(`./sandbox-host${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`, import.meta.url), {
      workerData: init, env: this.options.environment, stdout: true, stderr: true,
    });
    for (const stream of [worker.stdout, worker.stderr]) {
      createInterface({ input: stream }).on('line', (line) => this.options.onOutput?.(line, this.options.functionName));
    }
    worker.on('message', (message: Partial<SpansMessage>) => {
      if (message.spans) this.options.onSpans?.(message.spans, this.options.functionName);
    });
    const startedMs = Date.now();
    const ready = new Promise<void>((resolve, reject) => {
      const onMessage = (message: { ready?: boolean }) => {
        if (!message.ready) return;
        worker.off('message', onMessage);
        sandbox.initMs = Date.now() - startedMs;
        resolve();
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
    const sandbox: Sandbox = { worker, ready, busy: false, initMs: 0 };
    ready.catch(() => this.#kill(sandbox));
    this.#all.add(sandbox);
    return sandbox;
  }

  async #kill(sandbox: Sandbox): Promise<void> {
    if (!this.#all.delete(sandbox)) return;
    const index = this.#idle.indexOf(sandbox);
    if (index >= 0) this.#idle.splice(index, 1);
    await sandbox.worker.terminate();
    // Someone waiting for a sandbox gets a fresh one.
    const next = this.#waiting.shift();
    if (next && !this.#stopped) {
      const fresh = this.#start();
      fresh.busy = true;
      fresh.ready.then(() => next({ sandbox: fresh, cold: true }), () => undefined);
    }
  }
}
