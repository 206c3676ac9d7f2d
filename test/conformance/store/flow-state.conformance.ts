/**
 * The flow state contract (store/sqlite/sqlite-flow-state-store.ts FlowStateStore), one behaviour per test, run
 * against every backend: the deduplication inbox and correlations, including claims, closes and
 * timeouts racing from several connections.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StorageUnavailableError } from '../../../src/common/errors.js';
import type { BackendKind, StoreBackend } from './backend.js';
import { withStore } from './registry.conformance.js';
import type { ClaimRequest, CorrelationRow, FlowStateStore } from '../../../src/store/contracts/index.js';

/** An instant `s` seconds after 2030-01-01T00:00:00Z, as the callers write them. */
const at = (s: number): string => new Date(Date.UTC(2030, 0, 1) + s * 1000).toISOString();
const KEY = 'a'.repeat(64);

/** A claim at `t` (seconds) with a 100 s window and a 10 s lease. */
function claimAt(t: number, correlationId: string, extra: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    tenant: 'acme',
    flow: 'orders',
    keyHash: KEY,
    correlationId,
    now: at(t),
    expiresAt: at(t + 100),
    leaseExpiresAt: at(t + 10),
    reclaimFailed: true,
    ...extra,
  };
}

const DONE = { status: 'done' as const, responseStatus: 201, headers: { 'x-a': '1' }, body: '{"t":"json","v":1}' };

/** An open row to be, opened at `t` with a deadline `secs` later. */
function corr(
  keyHash: string,
  t: number,
  secs: number,
  extra: Partial<CorrelationRow> = {},
): Omit<CorrelationRow, 'status' | 'closed_at'> {
  return {
    tenant: 'acme',
    flow: 'order',
    key_hash: keyHash,
    step: 'accept',
    opened_at: at(t),
    deadline: at(t + secs),
    on_timeout_flow: 'order-timeout',
    correlation_id: `c-${keyHash}`,
    state: '{"amount":42}',
    ...extra,
  };
}

/** Opens `n` handles on one new store for `fn` and closes them all whatever happens. */
async function withShared(kind: BackendKind, n: number, fn: (hs: FlowStateStore[]) => Promise<void>): Promise<void> {
  const handles = await kind.openShared(n);
  try {
    await fn(handles.map((h) => h.flowState));
  } finally {
    for (const h of handles) await h.close();
  }
}

export function flowStateConformance(kind: BackendKind): void {
  const withState = (fn: (s: FlowStateStore) => Promise<void>) => withStore(kind, (s: StoreBackend) => fn(s.flowState));

  describe(`deduplication inbox (${kind.name})`, () => {
    test('the first claim of a key wins and writes an in_flight row; a second claim gets that row', async () =>
      withState(async (s) => {
        assert.deepEqual(await s.claim(claimAt(0, 'c1')), { claimed: true });
        const row = {
          tenant: 'acme',
          flow: 'orders',
          key_hash: KEY,
          status: 'in_flight',
          claimed_at: at(0),
          expires_at: at(100),
          lease_expires_at: at(10),
          first_correlation_id: 'c1',
          response_status: null,
          response_headers: null,
          response_body: null,
          finished_at: null,
        };
        assert.deepEqual(await s.getInbox('acme', 'orders', KEY), row);
        assert.deepEqual(await s.claim(claimAt(5, 'c2')), { claimed: false, row });
        assert.equal(await s.getInbox('acme', 'other', KEY), undefined);
      }));

    test('finish records the outcome only for the claim that holds the row, once', async () =>
      withState(async (s) => {
        await s.claim(claimAt(0, 'c1'));
        await s.finish('acme', 'orders', KEY, 'someone-else', { ...DONE, now: at(1) });
        assert.equal((await s.getInbox('acme', 'orders', KEY))?.status, 'in_flight');
        await s.finish('acme', 'orders', KEY, 'c1', { ...DONE, now: at(2) });
        await s.finish('acme', 'orders', KEY, 'c1', {
          status: 'failed',
          responseStatus: 500,
          headers: {},
          body: null,
          now: at(3),
        });
        const row = await s.getInbox('acme', 'orders', KEY);
        assert.deepEqual(
          [
            row?.status,
            row?.response_status,
            row?.response_headers,
            row?.response_body,
            row?.finished_at,
            row?.lease_expires_at,
          ],
          ['done', 201, '{"x-a":"1"}', '{"t":"json","v":1}', at(2), null],
        );
        // A done row within its window answers every later delivery.
        assert.deepEqual(await s.claim(claimAt(50, 'c2')), { claimed: false, row });
      }));

    test('an expired lease is claimed again as a fresh row, and the stale holder can no longer finish it', async () =>
      withState(async (s) => {
        await s.claim(claimAt(0, 'c1'));
        assert.equal((await s.claim(claimAt(9, 'c2'))).claimed, false);
        assert.deepEqual(await s.claim(claimAt(10, 'c3')), { claimed: true });
        await s.finish('acme', 'orders', KEY, 'c1', { ...DONE, now: at(11) });
        const row = await s.getInbox('acme', 'orders', KEY);
        assert.deepEqual(
          [row?.status, row?.first_correlation_id, row?.claimed_at, row?.expires_at, row?.response_status],
          ['in_flight', 'c3', at(10), at(110), null],
        );
      }));

    test('a done row past its window is claimed again, and the recorded answer is cleared', async () =>
      withState(async (s) => {
        await s.claim(claimAt(0, 'c1'));
        await s.finish('acme', 'orders', KEY, 'c1', { ...DONE, now: at(1) });
        assert.equal((await s.claim(claimAt(99, 'c2'))).claimed, false);
        assert.deepEqual(await s.claim(claimAt(100, 'c3')), { claimed: true });
        const row = await s.getInbox('acme', 'orders', KEY);
        assert.deepEqual(
          [
            row?.status,
            row?.first_correlation_id,
            row?.response_status,
            row?.response_headers,
            row?.response_body,
            row?.finished_at,
          ],
          ['in_flight', 'c3', null, null, null, null],
        );
      }));

    test('a failed row is claimed again only when the claim asks for it', async () =>
      withState(async (s) => {
        await s.claim(claimAt(0, 'c1'));
        await s.finish('acme', 'orders', KEY, 'c1', {
          status: 'failed',
          responseStatus: 502,
          headers: {},
          body: null,
          now: at(1),
        });
        const absorbed = await s.claim(claimAt(2, 'c2', { reclaimFailed: false }));
        assert.equal(absorbed.claimed, false);
        assert.equal(absorbed.claimed === false && absorbed.row.response_status, 502);
        assert.deepEqual(await s.claim(claimAt(3, 'c3', { reclaimFailed: true })), { claimed: true });
      }));

    test('release clears the lease of an in_flight row and returns it as it was; the next claim wins', async () =>
      withState(async (s) => {
        await s.claim(claimAt(0, 'c1'));
        const before = await s.getInbox('acme', 'orders', KEY);
        assert.deepEqual(await s.release('acme', 'orders', KEY), before);
        assert.equal((await s.getInbox('acme', 'orders', KEY))?.lease_expires_at, null);
        assert.deepEqual(await s.claim(claimAt(1, 'c2')), { claimed: true });
        assert.equal(await s.release('acme', 'orders', 'b'.repeat(64)), undefined);
      }));

    test('release leaves a finished row as it is', async () =>
      withState(async (s) => {
        await s.claim(claimAt(0, 'c1'));
        await s.finish('acme', 'orders', KEY, 'c1', { ...DONE, now: at(1) });
        const done = await s.getInbox('acme', 'orders', KEY);
        assert.deepEqual(await s.release('acme', 'orders', KEY), done);
        assert.deepEqual(await s.getInbox('acme', 'orders', KEY), done);
      }));

    test('ten claims of one key racing from three connections: exactly one wins, the others see its row', async () =>
      withShared(kind, 3, async (hs) => {
        const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => hs[i % 3]!.claim(claimAt(0, `c${i}`))));
        const winners = outcomes.flatMap((o, i) => (o.claimed ? [`c${i}`] : []));
        assert.equal(winners.length, 1);
        for (const o of outcomes) if (!o.claimed) assert.equal(o.row.first_correlation_id, winners[0]);
        assert.equal((await hs[0]!.getInbox('acme', 'orders', KEY))?.first_correlation_id, winners[0]);
      }));

    test('ten re-claims of an expired row racing from three connections: exactly one wins', async () =>
      withShared(kind, 3, async (hs) => {
        await hs[0]!.claim(claimAt(0, 'old'));
        const outcomes = await Promise.all(
          Array.from({ length: 10 }, (_, i) => hs[i % 3]!.claim(claimAt(20 + i, `c${i}`))),
        );
        assert.equal(outcomes.filter((o) => o.claimed).length, 1);
        const row = await hs[1]!.getInbox('acme', 'orders', KEY);
        assert.notEqual(row?.first_correlation_id, 'old');
        for (const o of outcomes) if (!o.claimed) assert.equal(o.row.first_correlation_id, row?.first_correlation_id);
      }));

    test('purgeInbox deletes only rows past their window, and an in_flight one only once its lease is gone', async () =>
      withState(async (s) => {
        const key = (c: string) => c.repeat(64);
        // done, window over: purged
        await s.claim(claimAt(0, 'c1', { keyHash: key('1') }));
        await s.finish('acme', 'orders', key('1'), 'c1', { ...DONE, now: at(1) });
        // done, window still open at t=100: kept
        await s.claim(claimAt(1, 'c2', { keyHash: key('2') }));
        await s.finish('acme', 'orders', key('2'), 'c2', { ...DONE, now: at(2) });
        // in_flight, window over, lease still live: kept
        await s.claim(claimAt(0, 'c3', { keyHash: key('3'), leaseExpiresAt: at(500) }));
        // in_flight, window over, lease released: purged
        await s.claim(claimAt(0, 'c4', { keyHash: key('4'), leaseExpiresAt: at(500) }));
        await s.release('acme', 'orders', key('4'));
        // in_flight, window and lease over: purged
        await s.claim(claimAt(0, 'c5', { keyHash: key('5') }));
        assert.equal(await s.purgeInbox(at(100)), 3);
        const left = await s.listInbox({ statuses: ['in_flight', 'done', 'failed'] });
        assert.deepEqual(left.map((r) => r.first_correlation_id).sort(), ['c2', 'c3']);
        assert.equal(await s.purgeInbox(at(100)), 0);
      }));

    test('listInbox: newest claim first, filtered by tenant, flow and status, at most limit rows', async () =>
      withState(async (s) => {
        await s.claim(claimAt(0, 'c1', { keyHash: '1'.repeat(64) }));
        await s.claim(claimAt(2, 'c2', { keyHash: '2'.repeat(64) }));
        await s.claim(claimAt(1, 'c3', { keyHash: '3'.repeat(64), flow: 'billing' }));
        await s.claim(claimAt(3, 'c4', { keyHash: '4'.repeat(64), tenant: 'beta' }));
        await s.finish('acme', 'orders', '2'.repeat(64), 'c2', { ...DONE, now: at(4) });
        const ids = async (f: Parameters<FlowStateStore['listInbox']>[0]) =>
          (await s.listInbox(f)).map((r) => r.first_correlation_id);
        assert.deepEqual(await ids({}), ['c4', 'c2', 'c3', 'c1']);
        assert.deepEqual(await ids({ tenant: 'acme' }), ['c2', 'c3', 'c1']);
        assert.deepEqual(await ids({ tenant: 'acme', flow: 'orders' }), ['c2', 'c1']);
        assert.deepEqual(await ids({ statuses: ['in_flight'] }), ['c4', 'c3', 'c1']);
        assert.deepEqual(await ids({ statuses: ['done', 'failed'] }), ['c2']);
        assert.deepEqual(await ids({ statuses: [] }), []);
        assert.deepEqual(await ids({ limit: 2 }), ['c4', 'c2']);
      }));
  });

  describe(`correlations (${kind.name})`, () => {
    test('an open correlation is recorded; opening the key again returns the row that holds it', async () =>
      withState(async (s) => {
        assert.equal(await s.openCorrelation(corr('k1', 0, 60)), undefined);
        const row = { ...corr('k1', 0, 60), status: 'open', closed_at: null };
        assert.deepEqual(await s.getCorrelation('acme', 'order', 'k1'), row);
        assert.deepEqual(await s.openCorrelation(corr('k1', 5, 60, { correlation_id: 'other', state: null })), row);
        assert.equal(await s.getCorrelation('acme', 'order', 'k2'), undefined);
      }));

    test('withdraw deletes only the open row of the delivery that opened it', async () =>
      withState(async (s) => {
        await s.openCorrelation(corr('k1', 0, 60));
        await s.withdrawCorrelation('acme', 'order', 'k1', 'someone-else');
        assert.notEqual(await s.getCorrelation('acme', 'order', 'k1'), undefined);
        await s.withdrawCorrelation('acme', 'order', 'k1', 'c-k1');
        assert.equal(await s.getCorrelation('acme', 'order', 'k1'), undefined);
        // A closed row stays, even for its own correlation id.
        await s.openCorrelation(corr('k2', 0, 60));
        await s.closeCorrelation('acme', 'order', 'k2', at(1));
        await s.withdrawCorrelation('acme', 'order', 'k2', 'c-k2');
        assert.equal((await s.getCorrelation('acme', 'order', 'k2'))?.status, 'closed');
      }));

    test('close: open becomes closed and the status before is returned; closing again changes nothing; no row is undefined', async () =>
      withState(async (s) => {
        await s.openCorrelation(corr('k1', 0, 60));
        assert.equal(await s.closeCorrelation('acme', 'order', 'k1', at(10)), 'open');
        assert.equal(await s.closeCorrelation('acme', 'order', 'k1', at(20)), 'closed');
        const row = await s.getCorrelation('acme', 'order', 'k1');
        assert.deepEqual([row?.status, row?.closed_at], ['closed', at(10)]);
        assert.equal(await s.closeCorrelation('acme', 'order', 'nothing', at(10)), undefined);
      }));

    test('close after a timeout is closed_late; the status decides, not the clock', async () =>
      withState(async (s) => {
        await s.openCorrelation(corr('late', 0, 5));
        assert.equal(await s.markTimedOut('acme', 'order', 'late'), true);
        assert.equal(await s.closeCorrelation('acme', 'order', 'late', at(3)), 'timed_out');
        const late = await s.getCorrelation('acme', 'order', 'late');
        assert.deepEqual([late?.status, late?.closed_at], ['closed_late', at(3)]);
        assert.equal(await s.closeCorrelation('acme', 'order', 'late', at(4)), 'closed_late');
        // Past its deadline but not yet timed out by a reconcile pass: closed.
        await s.openCorrelation(corr('past', 0, 5));
        assert.equal(await s.closeCorrelation('acme', 'order', 'past', at(60)), 'open');
        assert.equal((await s.getCorrelation('acme', 'order', 'past'))?.status, 'closed');
      }));

    test('dueCorrelations: open rows whose deadline has passed, oldest deadline first, at most limit', async () =>
      withState(async (s) => {
        await s.openCorrelation(corr('b', 0, 20));
        await s.openCorrelation(corr('a', 0, 10));
        await s.openCorrelation(corr('c', 0, 30));
        await s.openCorrelation(corr('later', 0, 31));
        await s.openCorrelation(corr('timed', 0, 1));
        await s.markTimedOut('acme', 'order', 'timed');
        await s.openCorrelation(corr('closed', 0, 2));
        await s.closeCorrelation('acme', 'order', 'closed', at(1));
        assert.deepEqual(
          (await s.dueCorrelations(at(30))).map((r) => r.key_hash),
          ['a', 'b', 'c'],
        );
        assert.deepEqual(
          (await s.dueCorrelations(at(30), 2)).map((r) => r.key_hash),
          ['a', 'b'],
        );
        assert.deepEqual(await s.dueCorrelations(at(9)), []);
        assert.deepEqual((await s.dueCorrelations(at(10)))[0], {
          ...corr('a', 0, 10),
          status: 'open',
          closed_at: null,
        });
      }));

    test('markTimedOut turns an open row timed_out once; a closed row is left alone', async () =>
      withState(async (s) => {
        await s.openCorrelation(corr('k1', 0, 5));
        assert.equal(await s.markTimedOut('acme', 'order', 'k1'), true);
        assert.equal(await s.markTimedOut('acme', 'order', 'k1'), false);
        assert.equal((await s.getCorrelation('acme', 'order', 'k1'))?.status, 'timed_out');
        await s.openCorrelation(corr('k2', 0, 5));
        await s.closeCorrelation('acme', 'order', 'k2', at(1));
        assert.equal(await s.markTimedOut('acme', 'order', 'k2'), false);
        assert.equal(await s.markTimedOut('acme', 'order', 'nothing'), false);
      }));

    test('opens of one key racing from three connections: exactly one opens, the others get its row', async () =>
      withShared(kind, 3, async (hs) => {
        const outcomes = await Promise.all(
          Array.from({ length: 9 }, (_, i) =>
            hs[i % 3]!.openCorrelation(corr('k', 0, 60, { correlation_id: `c${i}` })),
          ),
        );
        const opened = outcomes.flatMap((o, i) => (o === undefined ? [`c${i}`] : []));
        assert.equal(opened.length, 1);
        for (const o of outcomes) if (o !== undefined) assert.equal(o.correlation_id, opened[0]);
      }));

    test('timeouts of one row racing from three connections: exactly one reports it', async () =>
      withShared(kind, 3, async (hs) => {
        await hs[0]!.openCorrelation(corr('k', 0, 5));
        const outcomes = await Promise.all(
          Array.from({ length: 9 }, (_, i) => hs[i % 3]!.markTimedOut('acme', 'order', 'k')),
        );
        assert.equal(outcomes.filter(Boolean).length, 1);
      }));

    test('a close racing a timeout: one wins, and the other call and the row agree with it', async () =>
      withShared(kind, 3, async (hs) => {
        const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
        for (const k of keys) await hs[0]!.openCorrelation(corr(k, 0, 5));
        await Promise.all(
          keys.map(async (k, i) => {
            const closer = hs[i % 3]!;
            const reconciler = hs[(i + 1) % 3]!;
            // Half the pairs start with the timeout, half with the close.
            const [closedFrom, timedOut] =
              i % 2 === 0
                ? await Promise.all([
                    closer.closeCorrelation('acme', 'order', k, at(6)),
                    reconciler.markTimedOut('acme', 'order', k),
                  ])
                : await Promise.all([
                    reconciler.markTimedOut('acme', 'order', k),
                    closer.closeCorrelation('acme', 'order', k, at(6)),
                  ]).then(([t, c]) => [c, t] as const);
            const row = await hs[2]!.getCorrelation('acme', 'order', k);
            if (timedOut) assert.deepEqual([closedFrom, row?.status], ['timed_out', 'closed_late'], k);
            else assert.deepEqual([closedFrom, row?.status], ['open', 'closed'], k);
          }),
        );
      }));

    test('purgeCorrelations deletes finished rows whose deadline is before the cutoff, never an open one', async () =>
      withState(async (s) => {
        await s.openCorrelation(corr('open-old', 0, 5));
        await s.openCorrelation(corr('closed-old', 0, 5));
        await s.closeCorrelation('acme', 'order', 'closed-old', at(1));
        await s.openCorrelation(corr('late-old', 0, 5));
        await s.markTimedOut('acme', 'order', 'late-old');
        await s.openCorrelation(corr('timed-old', 0, 5));
        await s.markTimedOut('acme', 'order', 'timed-old');
        await s.closeCorrelation('acme', 'order', 'timed-old', at(7));
        await s.openCorrelation(corr('closed-at-cutoff', 0, 10));
        await s.closeCorrelation('acme', 'order', 'closed-at-cutoff', at(1));
        assert.equal(await s.purgeCorrelations(at(10)), 3);
        const left = await s.listCorrelations({ statuses: ['open', 'timed_out', 'closed', 'closed_late'] });
        assert.deepEqual(left.map((r) => r.key_hash).sort(), ['closed-at-cutoff', 'open-old']);
      }));

    test('listCorrelations: newest opening first, filtered by tenant, flow and status, at most limit rows', async () =>
      withState(async (s) => {
        await s.openCorrelation(corr('k1', 0, 60));
        await s.openCorrelation(corr('k2', 2, 60));
        await s.openCorrelation(corr('k3', 1, 60, { flow: 'refund' }));
        await s.openCorrelation(corr('k4', 3, 60, { tenant: 'beta' }));
        await s.closeCorrelation('acme', 'order', 'k2', at(4));
        const keys = async (f: Parameters<FlowStateStore['listCorrelations']>[0]) =>
          (await s.listCorrelations(f)).map((r) => r.key_hash);
        assert.deepEqual(await keys({}), ['k4', 'k2', 'k3', 'k1']);
        assert.deepEqual(await keys({ tenant: 'acme' }), ['k2', 'k3', 'k1']);
        assert.deepEqual(await keys({ tenant: 'acme', flow: 'order' }), ['k2', 'k1']);
        assert.deepEqual(await keys({ statuses: ['open', 'timed_out'] }), ['k4', 'k3', 'k1']);
        assert.deepEqual(await keys({ statuses: [] }), []);
        assert.deepEqual(await keys({ limit: 1 }), ['k4']);
      }));
  });

  describe(`flow state failures (${kind.name})`, () => {
    test('a store that cannot be used answers StorageUnavailableError (503)', async () => {
      const s = await kind.open();
      await s.close();
      await assert.rejects(
        Promise.resolve().then(() => s.flowState.claim(claimAt(0, 'c1'))),
        (err: unknown) => err instanceof StorageUnavailableError && err.status === 503,
      );
      await assert.rejects(
        Promise.resolve().then(() => s.flowState.getCorrelation('acme', 'order', 'k')),
        StorageUnavailableError,
      );
    });
  });
}
