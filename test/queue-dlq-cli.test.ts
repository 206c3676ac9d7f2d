import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { statePaths } from '../src/common/paths.js';
import type { QueueStore, QueueMessage } from '../src/queue/index.js';
import { openStore } from '../src/storage/index.js';
import { makeSandbox, svc } from './helpers/svc.js';

describe('svc dlq', () => {
  const sandbox = makeSandbox();
  const queuesDir = statePaths(sandbox.db).queuesDir;
  const ids: Record<string, number> = {};

  /** Runs `fn` on the sandbox's queues through the library: the state directory's files, or in the PostgreSQL pass the store's tables. */
  async function withQueues<T>(fn: (queues: QueueStore) => Promise<T>): Promise<T> {
    const store = await openStore(sandbox.store ?? sandbox.db, { pg: { maxConnections: 2 } });
    try {
      return await fn(store.queues);
    } finally {
      await store.close();
    }
  }

  /** Dead-letters every message currently in the queue through the library. */
  function deadLetterAll(tenant: string, flow: string, count: number): Promise<void> {
    return withQueues(async (store) => {
      let n = 0;
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      await store.startConsumer(tenant, flow, {
        pollIntervalMs: 10,
        handler: async (m: QueueMessage) => ({
          kind: 'dead',
          error: `step "call" failed for message ${m.id}\nsecond line`,
        }),
        onDeadLettered: () => {
          if (++n >= count) done();
        },
      });
      await finished;
    });
  }

  before(async () => {
    await withQueues(async (store) => {
      ids.a = (await store.append('acme', 'orders', { correlationId: 'corr-a', payload: { order: 1 } })).id;
      ids.b = (await store.append('acme', 'orders', { correlationId: 'corr-b', payload: { order: 2 } })).id;
      ids.c = (await store.append('globex', 'invoices', { correlationId: 'corr-c', payload: { invoice: 3 } })).id;
    });
    await deadLetterAll('acme', 'orders', 2);
    await deadLetterAll('globex', 'invoices', 1);
  });
  after(() => sandbox.cleanup());

  it('list prints every pending entry with its fields and never the correlation id', () => {
    const r = svc(sandbox, ['dlq', 'list', '--db', sandbox.db]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /^TENANT\s+FLOW\s+ID\s+ATTEMPTS\s+ENQUEUED_AT\s+FAILED_AT\s+LAST_ERROR$/);
    assert.equal(lines.length, 4);
    assert.match(
      lines[1]!,
      new RegExp(
        `^acme\\s+orders\\s+${ids.a}\\s+1\\s+\\d{4}-\\d\\d-\\d\\dT\\S+\\s+\\d{4}-\\d\\d-\\d\\dT\\S+\\s+step "call" failed for message ${ids.a} second line$`,
      ),
    );
    assert.match(lines[3]!, /^globex\s+invoices\s+1\s/);
    assert.doesNotMatch(r.stdout, /corr-/);
  });

  it('list narrows by tenant and flow, and --json carries the payloads', () => {
    const r = svc(sandbox, ['dlq', 'list', '--tenant', 'globex', '--json', '--db', sandbox.db]);
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as { tenant: string; id: number; payload: unknown }[];
    assert.deepEqual(
      rows.map((x) => [x.tenant, x.id, x.payload]),
      [['globex', ids.c, { invoice: 3 }]],
    );
    const none = svc(sandbox, ['dlq', 'list', '--tenant', 'acme', '--flow', 'nothing', '--db', sandbox.db]);
    assert.equal(none.stdout, 'DLQ is empty.\n');
  });

  it('replay makes a new message with a new id and hides the entry', async () => {
    const r = svc(sandbox, [
      'dlq',
      'replay',
      '--tenant',
      'acme',
      '--flow',
      'orders',
      '--id',
      String(ids.a),
      '--db',
      sandbox.db,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const m = /as message (\d+) \(correlation id ([^)]+)\)/.exec(r.stdout);
    assert.ok(m, r.stdout);
    assert.ok(Number(m[1]) > ids.b!, 'a new id, never a reused one');
    assert.notEqual(m[2], 'corr-a');
    const list = svc(sandbox, ['dlq', 'list', '--tenant', 'acme', '--db', sandbox.db]);
    assert.doesNotMatch(list.stdout, new RegExp(`orders\\s+${ids.a}\\s`));
    const stats = await withQueues((store) => store.stats('acme', 'orders'));
    assert.equal(stats.pending, 1, 'the replayed message waits at the back of the queue');
  });

  it('discard hides the entry at once; a second discard or replay of it exits 1 naming the list command', () => {
    const r = svc(sandbox, [
      'dlq',
      'discard',
      '--tenant',
      'acme',
      '--flow',
      'orders',
      '--id',
      String(ids.b),
      '--db',
      sandbox.db,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const again = svc(sandbox, [
      'dlq',
      'discard',
      '--tenant',
      'acme',
      '--flow',
      'orders',
      '--id',
      String(ids.b),
      '--db',
      sandbox.db,
    ]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no pending dead letter with id \d+ in queue acme\/orders.*svc dlq list/);
    const replay = svc(sandbox, [
      'dlq',
      'replay',
      '--tenant',
      'acme',
      '--flow',
      'orders',
      '--id',
      String(ids.b),
      '--db',
      sandbox.db,
    ]);
    assert.equal(replay.code, 1);
    const list = svc(sandbox, ['dlq', 'list', '--tenant', 'acme', '--db', sandbox.db]);
    assert.equal(list.stdout, 'DLQ is empty.\n');
  });

  it('each replay and discard leaves one audit entry on the tenant chain naming the actor; a refused one leaves none', () => {
    const entries = JSON.parse(
      svc(sandbox, ['audit', '--tenant', 'acme', '--json', '-l', '100', '--db', sandbox.db]).stdout,
    ) as { event_type: string; payload: { id: number; actor: string } }[];
    const dlq = entries
      .filter((e) => e.event_type.startsWith('queue.message.'))
      .map((e) => [e.event_type, e.payload.id, e.payload.actor]);
    assert.deepEqual(dlq.sort(), [
      ['queue.message.discarded', ids.b, 'cli'],
      ['queue.message.replayed', ids.a, 'cli'],
    ]);
  });

  it('replay and discard require --tenant, --flow and --id, and refuse bad names, creating nothing', () => {
    const missingId = svc(sandbox, ['dlq', 'replay', '--tenant', 'acme', '--flow', 'orders', '--db', sandbox.db]);
    assert.equal(missingId.code, 1);
    assert.match(missingId.stderr, /required option '--id <n>' not specified/);
    const missingFlow = svc(sandbox, ['dlq', 'discard', '--tenant', 'acme', '--id', '1', '--db', sandbox.db]);
    assert.equal(missingFlow.code, 1);
    assert.match(missingFlow.stderr, /--flow/);
    const badName = svc(sandbox, [
      'dlq',
      'discard',
      '--tenant',
      'Bad',
      '--flow',
      'orders',
      '--id',
      '1',
      '--db',
      sandbox.db,
    ]);
    assert.notEqual(badName.code, 0);
    assert.match(badName.stderr, /tenant "Bad" must start with a lowercase letter or digit/);
    const unknownQueue = svc(sandbox, [
      'dlq',
      'discard',
      '--tenant',
      'nobody',
      '--flow',
      'orders',
      '--id',
      '1',
      '--db',
      sandbox.db,
    ]);
    assert.equal(unknownQueue.code, 1);
    assert.equal(existsSync(`${queuesDir}/nobody`), false);
    const badId = svc(sandbox, [
      'dlq',
      'replay',
      '--tenant',
      'acme',
      '--flow',
      'orders',
      '--id',
      'x',
      '--db',
      sandbox.db,
    ]);
    assert.equal(badId.code, 1);
  });

  it('list on a state directory without queues prints DLQ is empty.', () => {
    const elsewhere = makeSandbox();
    try {
      const r = svc(elsewhere, ['dlq', 'list', '--db', elsewhere.db]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'DLQ is empty.\n');
    } finally {
      elsewhere.cleanup();
    }
  });
});
