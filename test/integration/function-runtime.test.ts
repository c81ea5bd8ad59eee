import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { FunctionRuntime, InvocationError } from '../../local/lambda/function-runtime.ts';

const file = fileURLToPath(new URL('../fixtures/lambda/index.mjs', import.meta.url));
type Answer = { env: string; invocations: number; loadedAt: number; startRemaining: number; endRemaining: number };

function runtime(overrides: Partial<ConstructorParameters<typeof FunctionRuntime>[0]> = {}) {
  return new FunctionRuntime({ functionName: 'fixture', file, exportName: 'handler', timeoutMs: 1_000, environment: { FIXTURE_VALUE: 'a' }, ...overrides });
}

describe('FunctionRuntime: Lambda sandboxes on worker threads', () => {
  it('gives each function its own environment and keeps a warm sandbox between invocations', async () => {
    const [a, b] = [runtime(), runtime({ environment: { FIXTURE_VALUE: 'b' } })];
    try {
      const first = (await a.invoke({})) as Answer;
      const second = (await a.invoke({})) as Answer;
      assert.equal(first.env, 'a');
      assert.equal(((await b.invoke({})) as Answer).env, 'b', 'process.env is per function, not shared');
      assert.equal(second.invocations, 2, 'warm start reuses the module');
      assert.equal(a.coldStarts, 1);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('counts remaining time down from the function timeout', async () => {
    const fn = runtime();
    try {
      await fn.invoke({}); // warm, so the countdown below is the invoke phase alone
      const answer = (await fn.invoke({ sleepMs: 200 })) as Answer;
      assert.ok(answer.startRemaining <= 1_000 && answer.startRemaining > 800, `start ${answer.startRemaining}`);
      assert.ok(answer.endRemaining <= answer.startRemaining - 180, `end ${answer.endRemaining}`);
    } finally {
      await fn.stop();
    }
  });

  it('gives a cold start its own Init phase: Init up to the limit does not count against the timeout, as on Lambda', async () => {
    // GIVEN a function whose static code takes 800 ms and whose timeout is 500 ms
    const fn = runtime({ timeoutMs: 500, environment: { FIXTURE_INIT_MS: '800' } });
    try {
      // WHEN its first invocation is a cold start THEN the handler still gets its whole timeout
      const answer = (await fn.invoke({})) as Answer;
      assert.ok(answer.startRemaining > 400, `remaining at the start of the handler: ${answer.startRemaining} ms`);
    } finally {
      await fn.stop();
    }
  });

  it('an Init phase past its limit eats into the timeout (Lambda retries Init inside the invocation)', async () => {
    const fn = runtime({ timeoutMs: 300, initPhaseLimitMs: 200, environment: { FIXTURE_INIT_MS: '1500' } });
    try {
      await assert.rejects(fn.invoke({}), (error: unknown) => error instanceof InvocationError && error.errorType === 'Timeout');
    } finally {
      await fn.stop();
    }
  });

  it('waiting for a free sandbox does not count against the timeout (that is concurrency, not the function\'s time)', async () => {
    // GIVEN one sandbox, warm, and two invocations of 350 ms each under a 500 ms timeout
    const fn = runtime({ timeoutMs: 500, maxSandboxes: 1 });
    try {
      await fn.invoke({});
      // WHEN both arrive at once THEN the second runs after the first, with its own whole timeout
      const answers = await Promise.all([fn.invoke({ sleepMs: 350 }), fn.invoke({ sleepMs: 350 })]) as Answer[];
      assert.deepEqual(answers.map((answer) => answer.invocations), [2, 3]);
      assert.ok((answers[1]?.startRemaining ?? 0) > 400, `the second started with ${answers[1]?.startRemaining} ms left`);
    } finally {
      await fn.stop();
    }
  });

  it('a timeout kills the sandbox (the next invocation is a cold start), as Lambda does', async () => {
    const fn = runtime({ timeoutMs: 300 });
    try {
      const before = (await fn.invoke({})) as Answer;
      await assert.rejects(fn.invoke({ sleepMs: 2_000 }), (error: unknown) => error instanceof InvocationError && error.errorType === 'Timeout');
      const after = (await fn.invoke({})) as Answer;
      assert.equal(after.invocations, 1, 'a fresh module');
      assert.notEqual(after.loadedAt, before.loadedAt);
      assert.equal(fn.coldStarts, 2);
    } finally {
      await fn.stop();
    }
  });

  it('reports a handler error without killing the sandbox, and forwards its log lines', async () => {
    const lines: string[] = [];
    const fn = runtime({ onOutput: (line) => void lines.push(line) });
    try {
      await assert.rejects(fn.invoke({ fail: true }), /handler failed on purpose/);
      await fn.invoke({ log: true });
      assert.equal(fn.coldStarts, 1);
      for (let i = 0; i < 20 && !lines.some((l) => l.includes('hello from the sandbox')); i += 1) await new Promise((r) => setTimeout(r, 25));
      assert.ok(lines.some((line) => line.includes('hello from the sandbox')));
    } finally {
      await fn.stop();
    }
  });

  it('fault injection: a crash during the work kills the sandbox mid-handler, whatever it had in flight', async () => {
    // GIVEN a handler that works for most of its timeout, and a crash drawn half-way (log scale) to the deadline
    const faults = { crashDuringWorkRate: 1 };
    const fn = runtime({ faults, timeoutMs: 10_000, random: () => 0.5 });
    try {
      const startedMs = Date.now();
      await assert.rejects(fn.invoke({ sleepMs: 6_000 }),
        (error: unknown) => error instanceof InvocationError && error.errorType === 'Runtime.ExitError' && /crash during the handler/.test(error.message));
      assert.ok(Date.now() - startedMs < 5_000, 'cut off before the handler finished');
      // THEN the next invocation gets a new sandbox (the killed one's module state is gone)
      faults.crashDuringWorkRate = 0;
      assert.equal(((await fn.invoke({})) as Answer).invocations, 1);
      assert.equal(fn.coldStarts, 2);
    } finally {
      await fn.stop();
    }
  });

  it('fault injection: a crash during the work may come late in a long invocation (its moment drawn on a log scale up to the deadline)', async () => {
    // GIVEN a 2 s timeout, a handler that needs 1.8 s, and a draw near the top of the scale
    const fn = runtime({ faults: { crashDuringWorkRate: 1 }, timeoutMs: 2_000, random: () => 0.95 });
    try {
      // WHEN it runs THEN it is killed well past its first moments (after an external call returned, a heartbeat, a late commit)
      const startedMs = Date.now();
      await assert.rejects(fn.invoke({ sleepMs: 1_800 }), (error: unknown) => error instanceof InvocationError && /crash during the handler, \d+ ms in/.test(error.message));
      const crashedAfterMs = Date.now() - startedMs;
      assert.ok(crashedAfterMs > 1_000 && crashedAfterMs < 1_800, `killed ${crashedAfterMs} ms in`);
      // and a handler that returns before the drawn moment is not crashed
      assert.equal(((await fn.invoke({ sleepMs: 10 })) as Answer).invocations, 1);
    } finally {
      await fn.stop();
    }
  });

  it('fault injection: a crash after the work is done fails the invocation and replaces the sandbox', async () => {
    const faults = { crashAfterWorkRate: 1 };
    const fn = runtime({ faults });
    try {
      await assert.rejects(fn.invoke({}), (error: unknown) => error instanceof InvocationError && error.errorType === 'Runtime.ExitError');
      faults.crashAfterWorkRate = 0;
      assert.equal(((await fn.invoke({})) as Answer).invocations, 1);
      assert.equal(fn.coldStarts, 2);
    } finally {
      await fn.stop();
    }
  });
});
