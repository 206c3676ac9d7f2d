/**
 * The queue contract (queue/contract.ts QueueStore, with the consumer options and outcomes of
 * queue/contract/), one behaviour per test, run against every backend: appends and ids, FIFO,
 * what a handler is given, retries and dead letters, counters, names, the queues holding messages,
 * compaction, the scheduler's lock, and one worker per queue across several handles sharing a store.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep } from '../../helpers/wait.js';
import type {
  AppendInput,
  Outcome,
  QueueConsumerOptions,
  QueueStore,
  RetryPolicy,
} from '../../../src/queue/contract.js';
import type { QueueBackendHandle, QueueBackendKind } from './backend-kind.js';
import { ackAll, startRecorded, until, type Decide, type RecordedWorker } from './recorded-worker.js';

/** How long a test watches for something that must not happen (a delivery too many). Milliseconds. */
const QUIET_MS = 150;

/** Three attempts, 20 ms then 40 ms apart. */
const FAST: RetryPolicy = Object.freeze({ maxAttempts: 3, initialDelayMs: 20, backoffFactor: 2, maxDelayMs: 1000 });

/** A retry a minute away (or up to two with its own delayMs): never due while a test runs. */
const SLOW: RetryPolicy = Object.freeze({ ...FAST, initialDelayMs: 60_000, maxDelayMs: 120_000 });

/** How far apart two readings of one due time may be (epoch milliseconds, as each backend stores them). */
const NEAR_MS = 5;

const TRACE = Object.freeze({
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  tracestate: 'congo=t61rcWkgMzE',
});

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

const NOT_FOUND = { code: 'SVC_ERR_NOT_FOUND' };
const INVALID_NAME = { code: 'SVC_ERR_INVALID_NAME' };

/** Runs `fn` on the backends of `opened` and closes them all whatever happens. */
async function closingAfter(opened: QueueBackendHandle[], fn: (bs: QueueStore[]) => Promise<void>): Promise<void> {
  try {
    await fn(opened.map((h) => h.backend));
  } finally {
    for (const h of opened) await h.close();
  }
}

/** Appends `n` messages to `tenant/flow` one after the other (each resolved before the next is made); their ids. */
async function appendInTurn(b: QueueStore, tenant: string, flow: string, n: number, tag = 'm'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++)
    ids.push((await b.append(tenant, flow, { correlationId: `${tag}-${i}`, payload: { tag, i } })).id);
  return ids;
}

/** Dead-letters every message of `tenant/flow` it is given, and waits for `n` of them to be reported. */
async function deadLetterAll(b: QueueStore, tenant: string, flow: string, n: number): Promise<RecordedWorker> {
  const w = await startRecorded(b, tenant, flow, () => ({ kind: 'dead', error: 'integrity' }));
  await until(`${n} dead letters in ${tenant}/${flow}`, () => w.deadLettered.length >= n);
  return w;
}

/** What onAttemptFailed reported, as [attempt, error, retryInMs, deadLettered, fixed]. */
function failureRows(w: RecordedWorker): unknown[][] {
  return w.failures.map((f) => [f.message.attempt, f.error, f.retryInMs, f.deadLettered, f.fixed]);
}

/** Asserts nothing more is delivered to `w` for a while. */
/** A worker started on `b` for acme/orders delivers exactly `ids`, in order, and nothing more. */
async function nextWorkerGets(b: QueueStore, ids: readonly number[]): Promise<void> {
  const w = await startRecorded(b, 'acme', 'orders');
  assert.deepEqual(
    (await w.delivered(ids.length)).map((m) => m.id),
    ids,
  );
  await assertQuiet(w, ids.length);
}

async function assertQuiet(w: RecordedWorker, n: number): Promise<void> {
  // On purpose: watching for a delivery that must not come.
  await sleep(QUIET_MS);
  assert.equal(w.seen.length, n, `exactly ${n} deliveries (got ids ${w.seen.map((m) => m.id).join(', ')})`);
}

const queueKey = (q: { tenant: string; flow: string }): string => `${q.tenant}/${q.flow}`;

/** One onIdle call: the due time it was given, and how many deliveries and failed attempts the worker had made by then. */
interface IdleCall {
  readonly nextRetryDueMs: number | undefined;
  readonly delivered: number;
  readonly failed: number;
}

/** A recorded worker that also records its onIdle calls and when each failed attempt was reported. */
interface WatchedWorker extends RecordedWorker {
  readonly idle: IdleCall[];
  /** When each onAttemptFailed came (epoch milliseconds), by index of `failures`. */
  readonly failedAtMs: number[];
}

async function startWatched(
  b: QueueStore,
  tenant: string,
  flow: string,
  decide: Decide = ackAll,
  opts: Partial<Omit<QueueConsumerOptions, 'handler'>> = {},
): Promise<WatchedWorker> {
  const idle: IdleCall[] = [];
  const failedAtMs: number[] = [];
  let delivered = 0;
  const counting: Decide = (m, nth) => {
    delivered = nth;
    return decide(m, nth);
  };
  const w = await startRecorded(b, tenant, flow, counting, {
    ...opts,
    onAttemptFailed: () => failedAtMs.push(Date.now()),
    onIdle: (nextRetryDueMs) => idle.push({ nextRetryDueMs, delivered, failed: failedAtMs.length }),
  });
  return { ...w, idle, failedAtMs };
}

/**
 * Where failure `i` of `w` puts its retry's due time: its delay after the handler was called at
 * the earliest, its delay after the failure was reported at the latest.
 */
function retryDueWindow(w: WatchedWorker, i: number): readonly [number, number] {
  const f = w.failures[i]!;
  const at = w.seen.findIndex((m) => m.id === f.message.id && m.attempt === f.message.attempt);
  assert.ok(at >= 0 && f.retryInMs !== undefined, `failure ${i} is a retry of a delivery seen`);
  return [w.seenAtMs[at]! + f.retryInMs!, w.failedAtMs[i]! + f.retryInMs!];
}

function assertWithin(value: number | undefined, [lo, hi]: readonly [number, number], what: string): void {
  assert.ok(value !== undefined && value >= lo && value <= hi, `${what}: ${value} not within [${lo}, ${hi}]`);
}

function assertNear(value: number | undefined, expected: number, what: string): void {
  assert.ok(value !== undefined && Math.abs(value - expected) <= NEAR_MS, `${what}: ${value}, not ${expected}`);
}

export function queueConformance(kind: QueueBackendKind): void {
  /** A test body on a fresh store. */
  const withB = (fn: (b: QueueStore) => Promise<void>) => async () =>
    closingAfter([await kind.open()], ([b]) => fn(b!));
  /** A test body on `n` handles sharing a fresh store. */
  const withS = (n: number, fn: (bs: QueueStore[]) => Promise<void>) => async () =>
    closingAfter(await kind.openShared(n), fn);

  describe(`queue appends and ids (${kind.name})`, () => {
    test(
      'append resolves with increasing ids, each queue on its own',
      withB(async (b) => {
        const a = await appendInTurn(b, 'acme', 'orders', 5);
        const other = await appendInTurn(b, 'acme', 'invoices', 3);
        for (const ids of [a, other])
          for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `ids increase: ${ids.join(', ')}`);
        const more = await appendInTurn(b, 'acme', 'orders', 2);
        assert.ok(more[0]! > a.at(-1)!, 'an append to another queue in between does not set a queue back');
      }),
    );

    test(
      'concurrent appends to one queue resolve with distinct ids',
      withB(async (b) => {
        const rs = await Promise.all(
          Array.from({ length: 50 }, (_, i) => b.append('acme', 'orders', { correlationId: `c${i}`, payload: i })),
        );
        assert.equal(new Set(rs.map((r) => r.id)).size, 50);
      }),
    );

    test(
      'ids are never reused once their messages are processed and the queue compacted',
      withB(async (b) => {
        const first = await appendInTurn(b, 'acme', 'orders', 3);
        await (await startRecorded(b, 'acme', 'orders')).delivered(3);
        await until('the queue processed', async () => (await b.stats('acme', 'orders')).pending === 0);
        await b.stopConsumer('acme', 'orders');
        await b.compact();
        const next = await b.append('acme', 'orders', { correlationId: 'after', payload: 'after' });
        assert.ok(next.id > Math.max(...first), `id ${next.id} after ${first.join(', ')}`);
        const w = await startRecorded(b, 'acme', 'orders');
        assert.deepEqual(
          (await w.delivered(1)).map((m) => m.id),
          [next.id],
        );
        await assertQuiet(w, 1);
      }),
    );

    test(
      'listQueues still lists a queue whose messages were all processed and compacted',
      withB(async (b) => {
        await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        await (await startRecorded(b, 'acme', 'orders')).delivered(1);
        await until('the queue processed', async () => (await b.stats('acme', 'orders')).pending === 0);
        await b.stopConsumer('acme', 'orders');
        await b.compact();
        assert.deepEqual((await b.listQueues()).map(queueKey), ['acme/orders']);
      }),
    );

    test(
      'compact() beside a running worker loses nothing: what is appended after is delivered, with later ids',
      withB(async (b) => {
        const first = await appendInTurn(b, 'acme', 'orders', 3);
        const w = await startRecorded(b, 'acme', 'orders');
        await w.delivered(3);
        await until('the queue processed', async () => (await b.stats('acme', 'orders')).pending === 0);
        await b.compact();
        const later = await appendInTurn(b, 'acme', 'orders', 2, 'later');
        assert.ok(Math.min(...later) > Math.max(...first));
        assert.deepEqual(
          (await w.delivered(5)).map((m) => m.id),
          [...first, ...later],
        );
        await assertQuiet(w, 5);
      }),
    );

    test(
      'listQueues lists every queue appended to',
      withB(async (b) => {
        assert.deepEqual(await b.listQueues(), []);
        for (const [tenant, flow] of [
          ['acme', 'orders'],
          ['acme', 'invoices'],
          ['beta', 'orders'],
        ] as const)
          await b.append(tenant, flow, { correlationId: 'c', payload: 1 });
        assert.deepEqual((await b.listQueues()).map(queueKey).sort(), ['acme/invoices', 'acme/orders', 'beta/orders']);
      }),
    );
  });

  describe(`queue names (${kind.name})`, () => {
    const BAD: readonly (readonly [string, string])[] = [
      ['Acme', 'orders'],
      ['acme', '../x'],
      ['', 'orders'],
      ['acme', ''],
      ['acme', 'a'.repeat(129)],
      ['-acme', 'orders'],
    ];

    test(
      'checkNames accepts names by the rule and refuses others with SVC_ERR_INVALID_NAME',
      withB(async (b) => {
        b.checkNames('acme', 'orders');
        b.checkNames('a1', 'order_v2-x');
        for (const [tenant, flow] of BAD)
          assert.throws(() => b.checkNames(tenant, flow), INVALID_NAME, `${tenant}/${flow}`);
      }),
    );

    test(
      'append with a name breaking the rule rejects with SVC_ERR_INVALID_NAME and creates no queue',
      withB(async (b) => {
        for (const [tenant, flow] of BAD)
          await assert.rejects(
            b.append(tenant, flow, { correlationId: 'c', payload: 1 }),
            INVALID_NAME,
            `${tenant}/${flow}`,
          );
        assert.deepEqual(await b.listQueues(), []);
      }),
    );

    test(
      'startConsumer, stats, consumedElsewhere, backlogOf, replay and discard refuse a name breaking the rule',
      withB(async (b) => {
        await assert.rejects(
          async () => b.startConsumer('Acme', 'orders', { handler: async () => ({ kind: 'ack' }) }),
          INVALID_NAME,
        );
        await assert.rejects(async () => b.stats('acme', '../x'), INVALID_NAME);
        await assert.rejects(async () => b.consumedElsewhere('Acme', 'orders'), INVALID_NAME);
        await assert.rejects(async () => b.backlogOf('acme', '../x'), INVALID_NAME);
        await assert.rejects(async () => b.replayDeadLetter('Acme', 'orders', 1), INVALID_NAME);
        await assert.rejects(async () => b.discardDeadLetter('acme', '../x', 1), INVALID_NAME);
      }),
    );
  });

  describe(`queue delivery (${kind.name})`, () => {
    test(
      'first deliveries are FIFO: 200 appended before the worker and 200 while it runs arrive in id order, once each',
      withB(async (b) => {
        const before = (
          await Promise.all(
            Array.from({ length: 200 }, (_, i) => b.append('acme', 'orders', { correlationId: `b${i}`, payload: i })),
          )
        ).map((r) => r.id);
        const w = await startRecorded(b, 'acme', 'orders');
        const during = await appendInTurn(b, 'acme', 'orders', 200, 'during');
        const seen = await w.delivered(400);
        assert.deepEqual(
          seen.map((m) => m.id),
          [...before, ...during].sort((x, y) => x - y),
        );
        assert.ok(seen.every((m) => m.attempt === 1 && !m.isRetry));
        await assertQuiet(w, 400);
      }),
    );

    test(
      'a delivery carries the payload, correlation id, enqueuedAt and trace context given to append, and the id it resolved with',
      withB(async (b) => {
        const payloads: unknown[] = [
          { text: 'grüße ✓', n: 1.5, nested: { list: [1, null, 'x', true] }, empty: {} },
          null,
          'plain',
          42,
          [],
          false,
        ];
        const inputs: AppendInput[] = payloads.map((payload, i) => ({
          correlationId: `corr-${i}`,
          payload,
          enqueuedAt: `2030-01-02T03:04:0${i}.678Z`,
          ...TRACE,
        }));
        const ids: number[] = [];
        for (const input of inputs) ids.push((await b.append('acme', 'orders', input)).id);
        const seen = await (await startRecorded(b, 'acme', 'orders')).delivered(inputs.length);
        assert.deepEqual(
          seen.map((m) => ({
            id: m.id,
            correlationId: m.correlationId,
            payload: m.payload,
            enqueuedAt: m.enqueuedAt,
            traceparent: m.traceparent,
            tracestate: m.tracestate,
          })),
          inputs.map((input, i) => ({
            id: ids[i],
            correlationId: input.correlationId,
            payload: input.payload,
            enqueuedAt: input.enqueuedAt,
            ...TRACE,
          })),
        );
      }),
    );

    test(
      'without enqueuedAt a message is stamped with the time of the append (ISO 8601 UTC); without trace context it carries none',
      withB(async (b) => {
        const t0 = Date.now();
        await b.append('acme', 'orders', { correlationId: 'c', payload: { a: 1 } });
        const t1 = Date.now();
        const [m] = await (await startRecorded(b, 'acme', 'orders')).delivered(1);
        assert.match(m!.enqueuedAt, ISO_UTC);
        const at = Date.parse(m!.enqueuedAt);
        assert.ok(at >= t0 - 1000 && at <= t1 + 1000, `enqueuedAt ${m!.enqueuedAt} within the append`);
        assert.equal(m!.traceparent, undefined);
        assert.equal(m!.tracestate, undefined);
      }),
    );

    test(
      'a first delivery has attempt 1 and isRetry false',
      withB(async (b) => {
        await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const [m] = await (await startRecorded(b, 'acme', 'orders')).delivered(1);
        assert.deepEqual([m!.attempt, m!.isRetry], [1, false]);
      }),
    );

    test(
      'a message appended on one handle is delivered by the worker on another',
      withS(2, async ([b0, b1]) => {
        const w = await startRecorded(b0!, 'acme', 'orders');
        const { id } = await b1!.append('acme', 'orders', { correlationId: 'c', payload: 'x' });
        assert.deepEqual(
          (await w.delivered(1)).map((m) => [m.id, m.payload]),
          [[id, 'x']],
        );
      }),
    );
  });

  describe(`queue retries and dead letters (${kind.name})`, () => {
    /** One message, failed with `retry` by FAST on every attempt until it is dead-lettered. */
    async function failEveryAttempt(b: QueueStore): Promise<{ id: number; w: RecordedWorker }> {
      const { id } = await b.append('acme', 'orders', {
        correlationId: 'corr-1',
        payload: { x: 1 },
        enqueuedAt: '2030-01-01T00:00:00.000Z',
        ...TRACE,
      });
      const w = await startRecorded(b, 'acme', 'orders', (m) => ({
        kind: 'retry',
        error: `fail ${m.attempt}`,
        policy: FAST,
      }));
      await until('the message dead-lettered', () => w.deadLettered.length >= 1);
      return { id, w };
    }

    test(
      'a retry outcome redelivers the same message after the policy delay, with the next attempt number and isRetry',
      withB(async (b) => {
        const { id, w } = await failEveryAttempt(b);
        assert.deepEqual(
          w.seen.map((m) => [m.id, m.attempt, m.isRetry]),
          [
            [id, 1, false],
            [id, 2, true],
            [id, 3, true],
          ],
        );
        for (const m of w.seen)
          assert.deepEqual(
            [m.correlationId, m.payload, m.enqueuedAt, m.traceparent, m.tracestate],
            ['corr-1', { x: 1 }, '2030-01-01T00:00:00.000Z', TRACE.traceparent, TRACE.tracestate],
          );
        const gaps = [w.seenAtMs[1]! - w.seenAtMs[0]!, w.seenAtMs[2]! - w.seenAtMs[1]!];
        // The delay runs from the outcome, which comes after the handler was called: a gap is at least the delay.
        assert.ok(gaps[0]! >= 20 - 2 && gaps[1]! >= 40 - 2, `gaps ${gaps.join(', ')} ms for delays 20, 40`);
      }),
    );

    test(
      'the attempt reaching maxAttempts dead-letters the message; onAttemptFailed reports each failure, onDeadLettered the last',
      withB(async (b) => {
        const { id, w } = await failEveryAttempt(b);
        assert.deepEqual(failureRows(w), [
          [1, 'fail 1', 20, false, false],
          [2, 'fail 2', 40, false, false],
          [3, 'fail 3', undefined, true, false],
        ]);
        assert.deepEqual(
          w.deadLettered.map((d) => [d.message.id, d.message.correlationId, d.message.attempt, d.error, d.attempts]),
          [[id, 'corr-1', 3, 'fail 3', 3]],
        );
        await assertQuiet(w, 3);
      }),
    );

    test(
      'a dead letter holds the queue, id, payload, enqueued time, attempts and last error, and never the correlation id',
      withB(async (b) => {
        const { id } = await failEveryAttempt(b);
        const rows = await b.listDeadLetters();
        assert.equal(rows.length, 1);
        const { failed_at: failedAt, ...row } = rows[0]!;
        assert.deepEqual(row, {
          tenant: 'acme',
          flow: 'orders',
          id,
          payload: { x: 1 },
          enqueued_at: '2030-01-01T00:00:00.000Z',
          attempts: 3,
          last_error: 'fail 3',
        });
        assert.match(failedAt, ISO_UTC);
      }),
    );

    test(
      'a retry with its own delayMs waits that long instead of the policy delay',
      withB(async (b) => {
        await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const w = await startRecorded(b, 'acme', 'orders', (m) =>
          m.attempt === 1 ? { kind: 'retry', error: 'later', policy: FAST, delayMs: 80 } : { kind: 'ack' },
        );
        await w.delivered(2);
        assert.deepEqual(failureRows(w), [[1, 'later', 80, false, false]]);
        assert.ok(w.seenAtMs[1]! - w.seenAtMs[0]! >= 80 - 2, `redelivered after ${w.seenAtMs[1]! - w.seenAtMs[0]!} ms`);
      }),
    );

    test(
      'retry-fixed consumes no attempt and never dead-letters, past maxAttempts',
      withB(async (b) => {
        await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const w = await startRecorded(
          b,
          'acme',
          'orders',
          (_m, nth) => (nth < 6 ? { kind: 'retry-fixed', delayMs: 10, error: 'busy' } : { kind: 'ack' }),
          { defaultPolicy: FAST },
        );
        const seen = await w.delivered(6);
        assert.deepEqual(
          seen.map((m) => [m.attempt, m.isRetry]),
          [
            [1, false],
            [1, true],
            [1, true],
            [1, true],
            [1, true],
            [1, true],
          ],
        );
        assert.deepEqual(
          failureRows(w),
          Array.from({ length: 5 }, () => [1, 'busy', 10, false, true]),
        );
        assert.deepEqual([w.deadLettered, await b.listDeadLetters()], [[], []]);
        await assertQuiet(w, 6);
      }),
    );

    test(
      'a retry after retry-fixed counts attempts from where they were',
      withB(async (b) => {
        await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const outcomes: Outcome[] = [
          { kind: 'retry', error: 'e', policy: FAST },
          { kind: 'retry-fixed', delayMs: 10 },
          { kind: 'retry', error: 'e', policy: FAST },
          { kind: 'ack' },
        ];
        const w = await startRecorded(b, 'acme', 'orders', (_m, nth) => outcomes[nth - 1]!);
        assert.deepEqual(
          (await w.delivered(4)).map((m) => m.attempt),
          [1, 2, 2, 3],
        );
      }),
    );

    test(
      'a dead outcome dead-letters at once, on the first attempt',
      withB(async (b) => {
        const { id } = await b.append('acme', 'orders', { correlationId: 'c', payload: { y: 2 } });
        const w = await deadLetterAll(b, 'acme', 'orders', 1);
        assert.deepEqual(failureRows(w), [[1, 'integrity', undefined, true, false]]);
        assert.deepEqual(
          w.deadLettered.map((d) => [d.message.id, d.attempts, d.error]),
          [[id, 1, 'integrity']],
        );
        assert.deepEqual(
          (await b.listDeadLetters()).map((r) => [r.id, r.attempts, r.last_error, r.payload]),
          [[id, 1, 'integrity', { y: 2 }]],
        );
        await assertQuiet(w, 1);
      }),
    );

    test(
      'a handler that throws counts as a retry by the default policy, the error message as the error',
      withB(async (b) => {
        const { id } = await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const policy: RetryPolicy = { ...FAST, maxAttempts: 2 };
        const w = await startRecorded(
          b,
          'acme',
          'orders',
          () => {
            throw new Error('boom');
          },
          { defaultPolicy: policy },
        );
        await until('the message dead-lettered', () => w.deadLettered.length >= 1);
        assert.deepEqual(
          w.seen.map((m) => [m.attempt, m.isRetry]),
          [
            [1, false],
            [2, true],
          ],
        );
        assert.deepEqual(failureRows(w), [
          [1, 'boom', 20, false, false],
          [2, 'boom', undefined, true, false],
        ]);
        assert.deepEqual(
          (await b.listDeadLetters()).map((r) => [r.id, r.attempts, r.last_error]),
          [[id, 2, 'boom']],
        );
      }),
    );

    test(
      'a scheduled retry outlives its worker: the next worker, on another handle, delivers it when due with the next attempt',
      withS(2, async ([b0, b1]) => {
        const { id } = await b0!.append('acme', 'orders', { correlationId: 'c', payload: 1, ...TRACE });
        const w0 = await startRecorded(b0!, 'acme', 'orders', () => ({
          kind: 'retry',
          error: 'later',
          policy: FAST,
          delayMs: 300,
        }));
        await until('the retry scheduled', () => w0.failures.length >= 1);
        const failedAt = Date.now();
        await w0.handle.close();
        const w1 = await startRecorded(b1!, 'acme', 'orders');
        const [m] = await w1.delivered(1);
        assert.deepEqual(
          [m!.id, m!.attempt, m!.isRetry, m!.correlationId, m!.traceparent],
          [id, 2, true, 'c', TRACE.traceparent],
        );
        assert.ok(
          w1.seenAtMs[0]! - w0.seenAtMs[0]! >= 300 - 2,
          `delivered ${w1.seenAtMs[0]! - w0.seenAtMs[0]!} ms after the failed attempt (due after 300)`,
        );
        assert.ok(w1.seenAtMs[0]! - failedAt < 5000);
      }),
    );

    test(
      'a failed message does not hold up the others',
      withB(async (b) => {
        const [first, second] = await appendInTurn(b, 'acme', 'orders', 2);
        const w = await startRecorded(b, 'acme', 'orders', (m) =>
          m.id === first && m.attempt === 1
            ? { kind: 'retry', error: 'e', policy: FAST, delayMs: 200 }
            : { kind: 'ack' },
        );
        await w.delivered(2);
        assert.deepEqual(
          w.seen.map((m) => m.id),
          [first, second],
        );
        assert.deepEqual(
          (await w.delivered(3)).map((m) => [m.id, m.attempt]),
          [
            [first, 1],
            [second, 1],
            [first, 2],
          ],
        );
      }),
    );
  });

  describe(`queue dead-letter operations (${kind.name})`, () => {
    test(
      'listDeadLetters lists every pending entry with its queue, filtered by tenant and/or flow',
      withB(async (b) => {
        const queues = [
          ['acme', 'orders', 2],
          ['acme', 'invoices', 1],
          ['beta', 'orders', 1],
        ] as const;
        const expected: string[] = [];
        for (const [tenant, flow, n] of queues)
          for (const id of await appendInTurn(b, tenant, flow, n)) expected.push(`${tenant}/${flow}/${id}`);
        for (const [tenant, flow, n] of queues) await deadLetterAll(b, tenant, flow, n);
        const keys = async (filter?: { tenant?: string; flow?: string }) =>
          (await b.listDeadLetters(filter)).map((r) => `${r.tenant}/${r.flow}/${r.id}`).sort();
        const having = (prefix: (k: string) => boolean) => expected.filter(prefix).sort();
        assert.deepEqual(
          await keys(),
          having(() => true),
        );
        assert.deepEqual(
          await keys({}),
          having(() => true),
        );
        assert.deepEqual(
          await keys({ tenant: 'acme' }),
          having((k) => k.startsWith('acme/')),
        );
        assert.deepEqual(
          await keys({ flow: 'orders' }),
          having((k) => k.split('/')[1] === 'orders'),
        );
        assert.deepEqual(
          await keys({ tenant: 'acme', flow: 'invoices' }),
          having((k) => k.startsWith('acme/invoices/')),
        );
        assert.deepEqual(await keys({ tenant: 'nobody' }), []);
      }),
    );

    test(
      'replayDeadLetter appends the payload as a new message (new id, attempt 1, new correlation id) that is delivered, and the entry is gone',
      withB(async (b) => {
        const orig = await b.append('acme', 'orders', { correlationId: 'orig', payload: { a: 1 } });
        const w = await startRecorded(b, 'acme', 'orders', (m) =>
          m.correlationId === 'orig' ? { kind: 'dead', error: 'bad' } : { kind: 'ack' },
        );
        await until('the message dead-lettered', () => w.deadLettered.length >= 1);
        const r = await b.replayDeadLetter('acme', 'orders', orig.id);
        assert.deepEqual(
          [r.entry.id, r.entry.payload, r.entry.attempts, r.entry.last_error],
          [orig.id, { a: 1 }, 1, 'bad'],
        );
        assert.ok(r.message.id > orig.id, `new id ${r.message.id} after ${orig.id}`);
        assert.ok(
          r.message.correlationId.length > 0 && r.message.correlationId !== 'orig',
          `new correlation id ${r.message.correlationId}`,
        );
        assert.deepEqual(await b.listDeadLetters(), []);
        const seen = await w.delivered(2);
        assert.deepEqual(
          [seen[1]!.id, seen[1]!.correlationId, seen[1]!.attempt, seen[1]!.isRetry, seen[1]!.payload],
          [r.message.id, r.message.correlationId, 1, false, { a: 1 }],
        );
        assert.equal((await b.stats('acme', 'orders')).deadLettersPending, 0);
      }),
    );

    test(
      "a dead letter made by one handle's worker is listed and replayed from another handle, and the worker delivers the replay",
      withS(2, async ([b0, b1]) => {
        const { id } = await b0!.append('acme', 'orders', { correlationId: 'orig', payload: { r: 1 } });
        const w = await startRecorded(b0!, 'acme', 'orders', (m) =>
          m.correlationId === 'orig' ? { kind: 'dead', error: 'bad' } : { kind: 'ack' },
        );
        await until('the dead letter', () => w.deadLettered.length >= 1);
        assert.deepEqual(
          (await b1!.listDeadLetters()).map((r) => [r.tenant, r.flow, r.id]),
          [['acme', 'orders', id]],
        );
        const r = await b1!.replayDeadLetter('acme', 'orders', id);
        assert.deepEqual((await w.delivered(2))[1]!.id, r.message.id);
        assert.deepEqual(await b0!.listDeadLetters(), []);
      }),
    );

    test(
      'replayDeadLetter takes the correlation id it is given',
      withB(async (b) => {
        const { id } = await b.append('acme', 'orders', { correlationId: 'orig', payload: 1 });
        await deadLetterAll(b, 'acme', 'orders', 1);
        await b.stopConsumer('acme', 'orders');
        const r = await b.replayDeadLetter('acme', 'orders', id, 'chosen-id');
        assert.equal(r.message.correlationId, 'chosen-id');
        const [m] = await (await startRecorded(b, 'acme', 'orders')).delivered(1);
        assert.deepEqual([m!.id, m!.correlationId], [r.message.id, 'chosen-id']);
      }),
    );

    test(
      'discardDeadLetter returns the entry and hides it at once; it is not delivered again',
      withB(async (b) => {
        const { id } = await b.append('acme', 'orders', { correlationId: 'c', payload: { d: 1 } });
        const w = await deadLetterAll(b, 'acme', 'orders', 1);
        const [listed] = await b.listDeadLetters();
        const entry = await b.discardDeadLetter('acme', 'orders', id);
        const { tenant: _t, flow: _f, ...expected } = listed!;
        assert.deepEqual(entry, expected);
        assert.deepEqual(await b.listDeadLetters(), []);
        assert.equal((await b.stats('acme', 'orders')).deadLettersPending, 0);
        await assertQuiet(w, 1);
      }),
    );

    test(
      'replaying or discarding an id that is not a pending dead letter fails with SVC_ERR_NOT_FOUND',
      withB(async (b) => {
        await assert.rejects(async () => b.replayDeadLetter('acme', 'never', 1), NOT_FOUND);
        await assert.rejects(async () => b.discardDeadLetter('acme', 'never', 1), NOT_FOUND);
        const [dead, acked] = await appendInTurn(b, 'acme', 'orders', 2);
        const w = await startRecorded(b, 'acme', 'orders', (m) =>
          m.id === dead ? { kind: 'dead', error: 'x' } : { kind: 'ack' },
        );
        await w.delivered(2);
        await until('the dead letter', () => w.deadLettered.length >= 1);
        for (const id of [acked!, dead! + 1000]) {
          await assert.rejects(async () => b.replayDeadLetter('acme', 'orders', id), NOT_FOUND, `replay ${id}`);
          await assert.rejects(async () => b.discardDeadLetter('acme', 'orders', id), NOT_FOUND, `discard ${id}`);
        }
        assert.deepEqual(
          (await b.listDeadLetters()).map((r) => r.id),
          [dead],
        );
      }),
    );

    test(
      'an entry once replayed or discarded is not found again',
      withB(async (b) => {
        const [x, y] = await appendInTurn(b, 'acme', 'orders', 2);
        await deadLetterAll(b, 'acme', 'orders', 2);
        await b.replayDeadLetter('acme', 'orders', x!);
        await b.discardDeadLetter('acme', 'orders', y!);
        for (const id of [x!, y!]) {
          await assert.rejects(async () => b.replayDeadLetter('acme', 'orders', id), NOT_FOUND);
          await assert.rejects(async () => b.discardDeadLetter('acme', 'orders', id), NOT_FOUND);
        }
      }),
    );
  });

  describe(`queue stats (${kind.name})`, () => {
    test(
      'stats of a queue never appended to count nothing',
      withB(async (b) => {
        const s = await b.stats('acme', 'never');
        assert.deepEqual(
          [s.tenant, s.flow, s.total, s.pending, s.retriesScheduled, s.retries, s.deadLettersPending],
          ['acme', 'never', 0, 0, 0, [], 0],
        );
      }),
    );

    test(
      'stats count the messages waiting for their first delivery as pending',
      withB(async (b) => {
        await appendInTurn(b, 'acme', 'orders', 3);
        const s = await b.stats('acme', 'orders');
        assert.deepEqual(
          [s.tenant, s.flow, s.pending, s.retriesScheduled, s.retries, s.deadLettersPending],
          ['acme', 'orders', 3, 0, [], 0],
        );
      }),
    );

    test(
      "stats count a scheduled retry (with its attempts and due time) and a pending dead letter, on the worker's handle, its backend and another handle",
      withS(2, async ([b0, b1]) => {
        const [retried, dead] = await appendInTurn(b0!, 'acme', 'orders', 3);
        const slow: RetryPolicy = { ...FAST, initialDelayMs: 60_000, maxDelayMs: 60_000 };
        const t0 = Date.now();
        const w = await startRecorded(b0!, 'acme', 'orders', (m) =>
          m.id === retried
            ? { kind: 'retry', error: 'later', policy: slow }
            : m.id === dead
              ? { kind: 'dead', error: 'bad' }
              : { kind: 'ack' },
        );
        await w.delivered(3);
        await until('the retry and the dead letter recorded', () => w.failures.length >= 2);
        const t1 = Date.now();
        for (const [where, stats] of [
          ['handle', () => w.handle.stats()],
          ['backend', () => b0!.stats('acme', 'orders')],
          ['other handle', () => b1!.stats('acme', 'orders')],
        ] as const) {
          await until(`${where}: the figures settle`, async () => (await stats()).pending === 0);
          const s = await stats();
          assert.deepEqual(
            [s.pending, s.retriesScheduled, s.deadLettersPending, s.retries.map((r) => [r.id, r.attempts])],
            [0, 1, 1, [[retried, 1]]],
            where,
          );
          assert.ok(
            s.retries[0]!.dueMs >= t0 + 60_000 - 1000 && s.retries[0]!.dueMs <= t1 + 60_000 + 1000,
            `${where}: due ${s.retries[0]!.dueMs - t1} ms from now`,
          );
        }
      }),
    );

    test(
      'processed counts the messages whose delivery finished (acknowledged, at once or after retries): a message failing twice then succeeding counts once, one waiting for a retry or dead-lettered counts none, on every handle',
      withS(2, async ([b0, b1]) => {
        const [twice, waits, dead, once] = await appendInTurn(b0!, 'acme', 'orders', 4);
        const w = await startRecorded(b0!, 'acme', 'orders', (m) =>
          m.id === twice && m.attempt < 3
            ? { kind: 'retry', error: 'not yet', policy: FAST }
            : m.id === waits
              ? { kind: 'retry', error: 'later', policy: SLOW }
              : m.id === dead
                ? { kind: 'dead', error: 'bad' }
                : { kind: 'ack' },
        );
        // 3 deliveries of `twice`, one of each other.
        await w.delivered(6);
        assert.deepEqual(
          w.seen.filter((m) => m.id === twice).map((m) => m.attempt),
          [1, 2, 3],
        );
        assert.equal(w.seen.filter((m) => m.id === once).length, 1);
        for (const [where, stats] of [
          ['handle', () => w.handle.stats()],
          ['backend', () => b0!.stats('acme', 'orders')],
          ['other handle', () => b1!.stats('acme', 'orders')],
        ] as const) {
          await until(`${where}: the figures settle`, async () => {
            const s = await stats();
            return s.pending === 0 && s.retriesScheduled === 1 && s.processed >= 2;
          });
          // On purpose: a count too high (an attempt counted) would show after the settling.
          await sleep(QUIET_MS);
          const s = await stats();
          assert.deepEqual(
            [s.processed, s.pending, s.retriesScheduled, s.deadLettersPending, s.total],
            [2, 0, 1, 1, 4],
            where,
          );
        }
      }),
    );
  });

  describe(`queues holding messages, compaction and coordination (${kind.name})`, () => {
    test(
      'queuesWithMessages lists the queues with messages waiting (readyAt 0) or a retry scheduled (readyAt its due time), on any handle, and not those processed or holding only dead letters; backlogOf gives the same per queue',
      withS(2, async ([b0, b1]) => {
        await appendInTurn(b0!, 'acme', 'waiting', 2);
        let retryDue: number | undefined;
        for (const [flow, decide] of [
          ['retrying', () => ({ kind: 'retry', error: 'later', policy: SLOW })],
          ['done', () => ({ kind: 'ack' })],
          ['dead', () => ({ kind: 'dead', error: 'bad' })],
        ] as const) {
          await appendInTurn(b0!, 'acme', flow, 1);
          const w = await startWatched(b0!, 'acme', flow, decide as () => Outcome);
          await w.delivered(1);
          if (flow !== 'done') await until(`${flow}: the outcome recorded`, () => w.failures.length >= 1);
          if (flow === 'retrying') {
            await until('the worker idle with its retry', () => w.idle.some((c) => c.failed === 1));
            retryDue = w.idle.find((c) => c.failed === 1)!.nextRetryDueMs;
            assertWithin(retryDue, retryDueWindow(w, 0), 'the due time onIdle gave');
          }
          // Closing writes what the worker acknowledged.
          await b0!.stopConsumer('acme', flow);
        }
        for (const [i, b] of [b0!, b1!].entries()) {
          const listed = (await b.queuesWithMessages()).sort((x, y) => queueKey(x).localeCompare(queueKey(y)));
          assert.deepEqual(listed.map(queueKey), ['acme/retrying', 'acme/waiting'], `handle ${i}`);
          assertNear(listed[0]!.readyAt, retryDue!, `handle ${i}: readyAt of the queue with only a retry`);
          assert.equal(listed[1]!.readyAt, 0, `handle ${i}: readyAt of the queue with messages waiting`);
          for (const q of listed) assert.deepEqual(await b.backlogOf(q.tenant, q.flow), q, `handle ${i}: ${q.flow}`);
          for (const flow of ['done', 'dead', 'never'])
            assert.equal(await b.backlogOf('acme', flow), undefined, `handle ${i}: backlogOf ${flow}`);
        }
      }),
    );

    test(
      'backlogOf is undefined for a queue never written and for one fully processed, and readyAt 0 while messages wait for a first delivery, on any handle',
      withS(2, async ([b0, b1]) => {
        const backlogs = () => Promise.all([b0!, b1!].map((b) => b.backlogOf('acme', 'orders')));
        assert.deepEqual(await backlogs(), [undefined, undefined], 'never written');
        await appendInTurn(b0!, 'acme', 'orders', 2);
        const waiting = { tenant: 'acme', flow: 'orders', readyAt: 0 };
        assert.deepEqual(await backlogs(), [waiting, waiting], 'messages waiting');
        const w = await startRecorded(b0!, 'acme', 'orders');
        await w.delivered(2);
        await w.handle.finish();
        assert.deepEqual(await backlogs(), [undefined, undefined], 'processed');
      }),
    );

    test(
      "backlogOf gives a scheduled retry's due time, still once it is due with no worker to deliver it (then in the past), and 0 again when a message is appended beside it",
      withB(async (b) => {
        await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const w = await startWatched(b, 'acme', 'orders', () => ({
          kind: 'retry',
          error: 'later',
          policy: SLOW,
          delayMs: 500,
        }));
        await until('the worker idle with its retry', () => w.idle.some((c) => c.failed === 1));
        const due = w.idle.find((c) => c.failed === 1)!.nextRetryDueMs!;
        assertWithin(due, retryDueWindow(w, 0), 'the due time onIdle gave');
        await w.handle.finish();
        assert.equal(w.seen.length, 1, 'the worker finished before its retry came due');
        assertNear((await b.backlogOf('acme', 'orders'))?.readyAt, due, 'readyAt before the due time');
        // On purpose: the retry comes due with nobody to deliver it.
        await sleep(Math.max(0, due - Date.now()) + 20);
        const late = await b.backlogOf('acme', 'orders');
        assertNear(late?.readyAt, due, 'readyAt once due');
        assert.ok(late!.readyAt < Date.now(), 'in the past');
        assert.deepEqual(await b.queuesWithMessages(), [late]);
        await b.append('acme', 'orders', { correlationId: 'd', payload: 2 });
        assert.deepEqual(await b.backlogOf('acme', 'orders'), { tenant: 'acme', flow: 'orders', readyAt: 0 });
      }),
    );

    test(
      'compact says how the space of processed messages is given back: by the pass, queue by queue, or by the database',
      withB(async (b) => {
        await appendInTurn(b, 'acme', 'orders', 2);
        const w = await startRecorded(b, 'acme', 'orders');
        await w.delivered(2);
        await b.stopConsumer('acme', 'orders');
        const queues = (await b.listQueues()).map(queueKey);
        const pass = await b.compact();
        if (pass.reclaimedBy === 'database') assert.deepEqual(pass.queues, []);
        else assert.deepEqual(pass.queues.map(queueKey), queues);
      }),
    );

    test(
      "one handle at a time holds the scheduler's lock; another takes it once it is released",
      withS(2, async ([b0, b1]) => {
        const first = await b0!.coordination.takeSchedulerLock(30_000);
        assert.ok(first !== undefined, 'the first handle takes the lock');
        assert.equal(first.stillHeldSync(), true);
        assert.equal(await b1!.coordination.takeSchedulerLock(30_000), undefined, 'held: the other gets none');
        await first.release();
        const second = await b1!.coordination.takeSchedulerLock(30_000);
        assert.ok(second !== undefined, 'released: the other takes it');
        await second.release();
      }),
    );
  });

  describe(`queue workers (${kind.name})`, () => {
    test(
      'a backend runs one worker per queue: a second startConsumer gives undefined, and consumer() gives the running one',
      withB(async (b) => {
        const w = await startRecorded(b, 'acme', 'orders');
        assert.equal(await b.startConsumer('acme', 'orders', { handler: async () => ({ kind: 'ack' }) }), undefined);
        assert.equal(b.consumer('acme', 'orders'), w.handle);
        assert.equal(w.handle.state, 'running');
        assert.equal(b.consumer('acme', 'invoices'), undefined);
      }),
    );

    test(
      'only one worker per queue across handles sharing the store; other queues start freely',
      withS(2, async ([b0, b1]) => {
        await startRecorded(b0!, 'acme', 'orders');
        assert.equal(await b1!.startConsumer('acme', 'orders', { handler: async () => ({ kind: 'ack' }) }), undefined);
        assert.equal(b1!.consumer('acme', 'orders'), undefined);
        await startRecorded(b1!, 'acme', 'invoices');
      }),
    );

    test(
      'consumedElsewhere is false for a queue nobody consumes, and on the handle running its worker',
      withS(2, async ([b0, b1]) => {
        assert.equal(await b0!.consumedElsewhere('acme', 'orders'), false);
        assert.equal(await b1!.consumedElsewhere('acme', 'orders'), false);
        await startRecorded(b0!, 'acme', 'orders');
        assert.equal(await b0!.consumedElsewhere('acme', 'orders'), false);
      }),
    );

    test(
      'consumedElsewhere is true on a handle sharing the store while another runs the worker, and false once it stopped',
      { skip: kind.consumedElsewhereUntestable },
      withS(2, async ([b0, b1]) => {
        await startRecorded(b0!, 'acme', 'orders');
        assert.equal(await b1!.consumedElsewhere('acme', 'orders'), true);
        await b0!.stopConsumer('acme', 'orders');
        await until('the worker gone', async () => !(await b1!.consumedElsewhere('acme', 'orders')));
      }),
    );

    test(
      "stopConsumer closes the backend's worker; the queue's worker can then start again there",
      withB(async (b) => {
        const w = await startRecorded(b, 'acme', 'orders');
        await b.stopConsumer('acme', 'orders');
        assert.equal(w.handle.state, 'closed');
        assert.equal(b.consumer('acme', 'orders'), undefined);
        const again = await startRecorded(b, 'acme', 'orders');
        const { id } = await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        assert.deepEqual(
          (await again.delivered(1)).map((m) => m.id),
          [id],
        );
        assert.equal(w.seen.length, 0);
      }),
    );

    test(
      "after its handle's close(), the same backend can start the queue's worker again",
      withB(async (b) => {
        const w = await startRecorded(b, 'acme', 'orders');
        await w.handle.close();
        assert.equal(w.handle.state, 'closed');
        const again = await startRecorded(b, 'acme', 'orders');
        const { id } = await b.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        assert.deepEqual(
          (await again.delivered(1)).map((m) => m.id),
          [id],
        );
      }),
    );

    test(
      'close() waits for the handler in flight and records its outcome: the next worker gets only what follows',
      withS(2, async ([b0, b1]) => {
        const [first, second] = await appendInTurn(b0!, 'acme', 'orders', 2);
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const w0 = await startRecorded(b0!, 'acme', 'orders', async () => (await gate, { kind: 'ack' }));
        await w0.delivered(1);
        let closed = false;
        const closing = w0.handle.close().then(() => (closed = true));
        assert.equal(w0.handle.state, 'closing');
        // On purpose: close() must still be waiting for the handler after a while.
        await sleep(QUIET_MS);
        assert.equal(closed, false, 'close() returned while the handler ran');
        release();
        await closing;
        assert.equal(w0.handle.state, 'closed');
        assert.deepEqual(
          w0.seen.map((m) => m.id),
          [first],
        );
        await nextWorkerGets(b1!, [second]);
      }),
    );

    test(
      "after a worker's close(), a worker on another handle gets every message it did not acknowledge, and none it did",
      withS(2, async ([b0, b1]) => {
        const ids = await appendInTurn(b0!, 'acme', 'orders', 10);
        // Acks four, then hangs on the fifth past closeGraceMs: abandoned, unacknowledged.
        const w0 = await startRecorded(
          b0!,
          'acme',
          'orders',
          (_m, nth) => (nth <= 4 ? { kind: 'ack' } : new Promise<Outcome>(() => undefined)),
          { closeGraceMs: 100 },
        );
        await w0.delivered(5);
        await w0.handle.close();
        await nextWorkerGets(b1!, ids.slice(4));
      }),
    );

    test(
      'a handler outliving closeGraceMs is abandoned: close() returns and the message is delivered again',
      withS(2, async ([b0, b1]) => {
        const { id } = await b0!.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const w0 = await startRecorded(b0!, 'acme', 'orders', () => new Promise<Outcome>(() => undefined), {
          closeGraceMs: 100,
        });
        await w0.delivered(1);
        const t0 = Date.now();
        await w0.handle.close();
        assert.ok(Date.now() - t0 < 3000, `close() took ${Date.now() - t0} ms with a 100 ms grace`);
        const w1 = await startRecorded(b1!, 'acme', 'orders');
        assert.deepEqual(
          (await w1.delivered(1)).map((m) => [m.id, m.correlationId]),
          [[id, 'c']],
        );
      }),
    );

    test(
      'concurrent appends from 3 handles to one queue get distinct ids and are all delivered exactly once',
      withS(3, async (bs) => {
        const w = await startRecorded(bs[0]!, 'acme', 'orders');
        const rs = await Promise.all(
          bs.flatMap((b, h) =>
            Array.from({ length: 100 }, (_, i) =>
              b.append('acme', 'orders', { correlationId: `h${h}-${i}`, payload: { h, i } }),
            ),
          ),
        );
        const ids = rs.map((r) => r.id);
        assert.equal(new Set(ids).size, 300, 'distinct ids');
        const seen = await w.delivered(300);
        assert.deepEqual(
          seen.map((m) => m.id).sort((x, y) => x - y),
          ids.sort((x, y) => x - y),
        );
        await assertQuiet(w, 300);
        assert.deepEqual(w.failures, []);
      }),
    );
  });

  describe(`queue workers finishing and idling (${kind.name})`, () => {
    test(
      'finish() waits for a handler outliving closeGraceMs and records its outcome; the worker delivers nothing more and its lock is free: a worker on another handle gets only what follows',
      withS(2, async ([b0, b1]) => {
        const [first, second] = await appendInTurn(b0!, 'acme', 'orders', 2);
        let handlerDoneAt: number | undefined;
        const w0 = await startRecorded(
          b0!,
          'acme',
          'orders',
          async () => {
            // On purpose: a handler running six times the grace close() would give it.
            await sleep(300);
            handlerDoneAt = Date.now();
            return { kind: 'ack' };
          },
          { closeGraceMs: 50 },
        );
        await w0.delivered(1);
        await w0.handle.finish();
        const finishedAt = Date.now();
        assert.ok(handlerDoneAt !== undefined && handlerDoneAt <= finishedAt, 'finish() resolved after the handler');
        assert.equal(w0.handle.state, 'closed');
        assert.equal(b0!.consumer('acme', 'orders'), undefined);
        assert.deepEqual(
          w0.seen.map((m) => m.id),
          [first],
        );
        await nextWorkerGets(b1!, [second]);
      }),
    );

    test(
      'finish() amid a backlog stops after the delivery in flight: the next worker delivers the rest in order, and none the first acknowledged',
      withS(2, async ([b0, b1]) => {
        const ids = await appendInTurn(b0!, 'acme', 'orders', 10);
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const w0 = await startRecorded(b0!, 'acme', 'orders', async (_m, nth) =>
          nth === 3 ? (await gate, { kind: 'ack' }) : { kind: 'ack' },
        );
        await w0.delivered(3);
        const finishing = w0.handle.finish();
        release();
        await finishing;
        assert.deepEqual(
          w0.seen.map((m) => m.id),
          ids.slice(0, 3),
        );
        await nextWorkerGets(b1!, ids.slice(3));
      }),
    );

    test(
      'finish() on an idle worker returns without waiting out its poll interval; the next worker delivers only what was appended since',
      withS(2, async ([b0, b1]) => {
        const before = await appendInTurn(b0!, 'acme', 'orders', 3);
        const w0 = await startWatched(b0!, 'acme', 'orders', ackAll, { pollIntervalMs: 10_000 });
        await until('the worker idle', () => w0.idle.length >= 1);
        const t0 = Date.now();
        await w0.handle.finish();
        assert.ok(Date.now() - t0 < 1000, `finish() took ${Date.now() - t0} ms with a 10 s poll interval`);
        assert.equal(w0.handle.state, 'closed');
        const after = await appendInTurn(b0!, 'acme', 'orders', 2, 'after');
        await nextWorkerGets(b1!, after);
        assert.deepEqual(
          w0.seen.map((m) => m.id),
          before,
        );
      }),
    );

    test(
      'a close() during finish() still applies its grace: finish() alone waits past closeGraceMs, close() abandons the handler, both return, and the message is delivered again',
      withS(2, async ([b0, b1]) => {
        const { id } = await b0!.append('acme', 'orders', { correlationId: 'c', payload: 1 });
        const w0 = await startRecorded(b0!, 'acme', 'orders', () => new Promise<Outcome>(() => undefined), {
          closeGraceMs: 100,
        });
        await w0.delivered(1);
        let finished = false;
        const finishing = w0.handle.finish().then(() => (finished = true));
        // On purpose: finish() must still be waiting for the handler once closeGraceMs has passed.
        await sleep(QUIET_MS);
        assert.equal(finished, false, 'finish() abandoned the handler');
        const t0 = Date.now();
        await w0.handle.close();
        await finishing;
        assert.ok(Date.now() - t0 < 3000, `close() and finish() took ${Date.now() - t0} ms with a 100 ms grace`);
        assert.equal(w0.handle.state, 'closed');
        const w1 = await startRecorded(b1!, 'acme', 'orders');
        assert.deepEqual(
          (await w1.delivered(1)).map((m) => [m.id, m.attempt]),
          [[id, 1]],
        );
      }),
    );

    test(
      'onIdle is first called once every waiting message was delivered, with undefined when no retry is scheduled, and again after a later delivery',
      withB(async (b) => {
        await appendInTurn(b, 'acme', 'orders', 40);
        const w = await startWatched(b, 'acme', 'orders');
        await until('the worker idle', () => w.idle.length >= 1);
        assert.equal(w.idle[0]!.delivered, 40, 'deliveries before the first onIdle');
        await b.append('acme', 'orders', { correlationId: 'later', payload: 1 });
        await until('the worker idle after the 41st delivery', () => w.idle.some((c) => c.delivered === 41));
        assert.deepEqual(
          w.idle.filter((c) => c.nextRetryDueMs !== undefined),
          [],
        );
      }),
    );

    test(
      'onIdle gives the due time of the earliest scheduled retry once nothing else is to deliver, as backlogOf does after the worker finished',
      withB(async (b) => {
        const [later, sooner] = await appendInTurn(b, 'acme', 'orders', 3);
        const delays = new Map([
          [later!, 120_000],
          [sooner!, 60_000],
        ]);
        const w = await startWatched(b, 'acme', 'orders', (m) =>
          delays.has(m.id)
            ? { kind: 'retry', error: 'later', policy: SLOW, delayMs: delays.get(m.id)! }
            : { kind: 'ack' },
        );
        await until('the worker idle', () => w.idle.length >= 1);
        assert.deepEqual([w.idle[0]!.delivered, w.idle[0]!.failed], [3, 2], 'deliveries and failures before onIdle');
        const soonest = retryDueWindow(
          w,
          w.failures.findIndex((f) => f.message.id === sooner),
        );
        for (const c of w.idle) assertWithin(c.nextRetryDueMs, soonest, 'the due time onIdle gave');
        await w.handle.finish();
        assertNear((await b.backlogOf('acme', 'orders'))?.readyAt, w.idle[0]!.nextRetryDueMs!, 'backlogOf readyAt');
      }),
    );
  });
}
