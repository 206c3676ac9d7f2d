import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StorageUnavailableError, SvcError } from '../../common/errors.js';
import { ExecutionLimiter, type FlowResult, type LoadedFlow } from '../../engine/index.js';
import { compileFlow } from '../../flow/compile.js';
import type { LogEventInput } from '../../store/event-log/event-log-row.js';
import { settlementOf } from '../../queue/settlement.js';
import type { RunGuard } from './dedup-guard.js';
import { failedDeliveryOutcome } from './delivery-outcome.js';
import { FlowExecutor, REGISTRY_UNAVAILABLE, type FlowExecutorDeps } from './flow-executor.js';
import type { Door, RunMeta } from './run-meta.js';

function loaded(frontMatter: string[], body: string): LoadedFlow {
  const src = ['---', 'flowdoc_version: "0.1"', 'flow: f', 'tenant: t', ...frontMatter, '---', body].join('\n');
  const r = compileFlow(src);
  assert.ok(r.ir, JSON.stringify(r.diagnostics));
  return { ir: r.ir, version: '1', hash: r.hash!, created_at: '2024-01-01T00:00:00Z' };
}

const ECHO = loaded([], '## Step: answer\n```ntd\n{"n": "{{ ctx.input.n }}"}\n```\n');
const FILTERED = loaded([], '## Step: gate\n```condition\nctx.input.n > 5\n```\n```ntd\n{"n": 1}\n```\n');
const DEDUP = loaded(['dedup_key: ctx.input.n'], '## Step: answer\n```ntd\n{"n": "{{ ctx.input.n }}"}\n```\n');

function executor(over: Partial<FlowExecutorDeps> = {}) {
  const rows: LogEventInput[] = [];
  const events = { emit: (e: LogEventInput) => void rows.push(e) };
  const deps: FlowExecutorDeps = {
    loadFlow: () => ECHO,
    setting: () => 1024,
    limiter: new ExecutionLimiter(4),
    events,
    traceEnabled: () => false,
    maxDurationSecs: 60,
    engine: { events },
    ...over,
  };
  return { exec: new FlowExecutor(deps), rows, deps };
}

const meta = (door: Door): RunMeta => ({ door, correlationId: `c-${door}`, headers: {} });

describe('the executor every door runs flows through', () => {
  for (const door of ['http', 'soap', 'grpc', 'cron'] as const) {
    it(`a ${door} delivery gets received and completed rows and answers the flow's output`, async () => {
      const { exec, rows } = executor();
      const result = await exec.run(ECHO, { n: 3 }, meta(door));
      assert.deepEqual(result.output, { n: 3 });
      assert.deepEqual(
        rows.map((r) => [r.event, r.correlation_id, r.http_status]),
        [
          ['received', `c-${door}`, undefined],
          ['completed', `c-${door}`, 200],
        ],
      );
    });
  }

  it('a queue delivery gets queue_processed (succeeded), or queue_filtered for a false condition, and no received/completed', async () => {
    const { exec, rows } = executor();
    await exec.run(ECHO, { n: 3 }, meta('queue'));
    const filtered = await exec.run(FILTERED, { n: 1 }, meta('queue'));
    assert.equal(filtered.filtered, true);
    assert.deepEqual(
      rows.map((r) => [r.event, r.outcome]),
      [
        ['queue_processed', 'succeeded'],
        ['queue_filtered', 'filtered'],
      ],
    );
  });

  it('synchronous doors share max_concurrent_flow_executions (503 server busy past it); queue deliveries do not count', async () => {
    const limiter = new ExecutionLimiter(1);
    assert.ok(limiter.tryAcquire()); // one execution already in flight
    const { exec } = executor({ limiter });
    await assert.rejects(
      exec.run(ECHO, { n: 1 }, meta('http')),
      (err: SvcError) => err.code === 'SVC_ERR_BUSY' && err.headers?.['retry-after'] === '1',
    );
    await assert.rejects(exec.run(ECHO, { n: 1 }, meta('grpc')), (err: SvcError) => err.code === 'SVC_ERR_BUSY');
    assert.deepEqual((await exec.run(ECHO, { n: 2 }, meta('queue'))).output, { n: 2 });
    limiter.release();
    await exec.run(ECHO, { n: 1 }, meta('http'));
    assert.equal(limiter.inFlight, 0, 'the slot is given back after the run');
  });

  it('a flow declaring dedup or correlation runs inside the guard exactly once, for every door', async () => {
    for (const door of ['http', 'queue'] as const) {
      const calls: string[] = [];
      const guard: RunGuard = {
        around: async (flow, _input, m, run): Promise<FlowResult> => {
          calls.push(`${flow.ir.flow}:${m.door}`);
          return run();
        },
      };
      const { exec, rows } = executor({ guard });
      await exec.run(DEDUP, { n: 1 }, meta(door));
      await exec.run(ECHO, { n: 1 }, meta(door));
      assert.deepEqual(calls, [`f:${door}`], 'only the flow that declares dedup is guarded, once');
      assert.equal(rows.length, door === 'queue' ? 2 : 4);
    }
  });

  it('a duplicate the guard answers without running (a replay) still gets its boundary rows, on every door', async () => {
    const replayed: FlowResult = {
      status: 200,
      headers: { 'x-svc-idempotent-replay': 'true' },
      output: { n: 'recorded' },
      filtered: false,
      faultHandled: false,
    };
    const guard: RunGuard = { around: async () => replayed };
    for (const [door, expected] of [
      ['http', ['received', 'completed']],
      ['queue', ['queue_processed']],
    ] as const) {
      const { exec, rows } = executor({ guard });
      assert.equal(await exec.run(DEDUP, { n: 1 }, meta(door)), replayed);
      assert.deepEqual(
        rows.map((r) => r.event),
        expected,
      );
      assert.deepEqual(rows.at(-1)!.payload, { n: 'recorded' });
    }
  });

  it('with tracing on, the first step_traced row of a delivery is labelled by its door', async () => {
    const expected = {
      http: 'received',
      soap: 'received',
      grpc: 'received',
      cron: 'scheduled',
      queue: 'dequeued',
    } as const;
    for (const door of Object.keys(expected) as Door[]) {
      const { exec, rows } = executor({ traceEnabled: () => true });
      await exec.run(ECHO, { n: 1 }, meta(door));
      const traced = rows.filter((r) => r.event === 'step_traced');
      assert.deepEqual(
        traced.map((r) => r.step),
        [expected[door], 'answer'],
        door,
      );
      assert.deepEqual(traced[0]!.payload, { n: 1 });
    }
  });

  it('a failing flow on a synchronous door is completed with its status and the operator detail, then thrown', async () => {
    const failing = loaded([], '## Step: boom\n```ntd\n{"x": "{{ ctx.input.missing.deeper }}"}\n```\n');
    const { exec, rows } = executor();
    await assert.rejects(exec.run(failing, {}, meta('http')), (err: SvcError) => err.status === 500);
    const completed = rows.find((r) => r.event === 'completed')!;
    assert.equal(completed.http_status, 500);
    assert.match(String(completed.reason), /boom/);
  });

  it('a completed row carries its duration, and the failing step of a rejected or fault-handled delivery', async () => {
    const rules = loaded(
      [],
      '## Step: check\n```validate\nctx.input.amount > 0 | amount must be positive | semantic\n```\n',
    );
    const handled = loaded(
      [],
      '## Step: check\n```validate\nctx.input.amount > 0 | amount must be positive | semantic\n```\n\n## Fault: sorry\n```ntd\n{"sorry": true}\n```\n',
    );
    const { exec, rows } = executor();
    await exec.run(rules, { amount: 1 }, meta('http'));
    await assert.rejects(exec.run(rules, { amount: 0 }, meta('http')), (err: SvcError) => err.status === 422);
    await exec.run(handled, { amount: 0 }, meta('cron'));
    const completed = rows.filter((r) => r.event === 'completed');
    assert.deepEqual(
      completed.map((r) => [r.http_status, r.outcome, r.failed_step]),
      [
        [200, undefined, undefined],
        [422, undefined, 'check'],
        [422, 'fault_handled', 'check'],
      ],
    );
    for (const r of completed) assert.ok(typeof r.duration_ms === 'number' && r.duration_ms > 0, String(r.duration_ms));
    for (const r of rows.filter((r) => r.event === 'received')) assert.equal(r.duration_ms, undefined);
  });

  it("a queued delivery's duration counts the wait from the message's enqueue time; a fault-handled one names its step", async () => {
    const handled = loaded(
      [],
      '## Step: check\n```validate\nctx.input.amount > 0 | amount must be positive | semantic\n```\n\n## Fault: sorry\n```ntd\n{"sorry": true}\n```\n',
    );
    const { exec, rows } = executor();
    const enqueuedAt = new Date(Date.now() - 60_000).toISOString();
    await exec.run(ECHO, { n: 1 }, { ...meta('queue'), enqueuedAt });
    await exec.run(FILTERED, { n: 1 }, { ...meta('queue'), enqueuedAt });
    await exec.run(handled, { amount: 0 }, { ...meta('queue'), enqueuedAt });
    await exec.run(ECHO, { n: 1 }, meta('queue'));
    assert.deepEqual(
      rows.map((r) => [r.event, r.outcome, r.failed_step]),
      [
        ['queue_processed', 'succeeded', undefined],
        ['queue_filtered', 'filtered', undefined],
        ['queue_processed', 'fault_handled', 'check'],
        ['queue_processed', 'succeeded', undefined],
      ],
    );
    // A minute in the queue is in the duration (a lower bound: no timing is asserted).
    for (const r of rows.slice(0, 3)) assert.ok(r.duration_ms! >= 60_000, String(r.duration_ms));
    // Without an enqueue time (a caller that has none) it is the execution alone.
    assert.ok(rows[3]!.duration_ms! > 0 && rows[3]!.duration_ms! < 60_000, String(rows[3]!.duration_ms));
  });

  it('a failed queued attempt names its step for the worker (failed_step of queue_failed, dlq_moved)', async () => {
    const failing = loaded([], '## Step: boom\n```ntd\n{"x": "{{ ctx.input.missing.deeper }}"}\n```\n');
    const { exec } = executor();
    const err = await exec.run(failing, {}, meta('queue')).then(
      () => assert.fail('the flow should fail'),
      (e: unknown) => e,
    );
    const outcome = failedDeliveryOutcome(err, failing.ir.queue);
    assert.equal(outcome.kind, 'retry');
    assert.equal(outcome.kind === 'retry' ? outcome.step : undefined, 'boom');
    const msg = { id: 1, correlationId: 'c', enqueuedAt: '', attempt: 3, payload: {}, isRetry: true };
    // The last attempt (the default policy allows 3): the dead letter's report names it too.
    const dead = settlementOf(msg, outcome, 0);
    assert.deepEqual([dead.kind, dead.kind === 'dead' ? dead.step : undefined], ['dead', 'boom']);
  });

  it('a registry that cannot be read for the tracing flag is storage unavailable (503) with a fixed text, its cause kept for the log, not a crash', async () => {
    const { exec } = executor({
      traceEnabled: () => {
        throw new Error('SQLITE_BUSY');
      },
    });
    await assert.rejects(
      exec.run(ECHO, {}, meta('queue')),
      (err: unknown) =>
        err instanceof StorageUnavailableError &&
        err.message === REGISTRY_UNAVAILABLE &&
        err.cause instanceof Error &&
        /SQLITE_BUSY/.test(err.cause.message),
    );
  });

  it('runNow answers a flow whose steps never wait at once (no promise), with both rows, and gives its slot back', () => {
    const limiter = new ExecutionLimiter(1);
    const { exec, rows } = executor({ limiter });
    for (let n = 0; n < 3; n++) {
      const result = exec.runNow(ECHO, { n }, meta('http'));
      assert.ok(!(result instanceof Promise), 'a FlowResult, not a promise');
      assert.deepEqual(result.output, { n });
    }
    assert.ok(limiter.tryAcquire(), 'the one slot was given back after each');
    assert.deepEqual(
      rows.map((r) => r.event),
      ['received', 'completed', 'received', 'completed', 'received', 'completed'],
    );
  });

  it('runNow: a failed flow whose steps never wait rejects with the failure, writes its completed row and gives its slot back', async () => {
    const limiter = new ExecutionLimiter(1);
    const { exec, rows } = executor({ limiter });
    const failing = loaded([], '## Step: check\n```validate\nhas(ctx.input.id) | id is required | syntactic\n```\n');
    const result = exec.runNow(failing, {}, meta('http'));
    assert.ok(result instanceof Promise);
    await assert.rejects(result, (err: SvcError) => err.code === 'SVC_ERR_INVALID_INPUT');
    assert.deepEqual(
      rows.map((r) => [r.event, r.http_status]),
      [
        ['received', undefined],
        ['completed', 400],
      ],
    );
    assert.ok(limiter.tryAcquire(), 'the slot was given back');
  });

  it('runNow past max_concurrent_flow_executions refuses from the call itself (503 server busy)', () => {
    const limiter = new ExecutionLimiter(1);
    assert.ok(limiter.tryAcquire());
    const { exec } = executor({ limiter });
    assert.throws(
      () => exec.runNow(ECHO, { n: 1 }, meta('http')),
      (err: SvcError) => err.code === 'SVC_ERR_BUSY',
    );
  });
});
