/**
 * Queue compaction gives disk back: after a queue is filled, drained and compacted, its files on
 * disk (bytes and allocated blocks) shrink to what is kept: an empty segment, a consumer log of one
 * checkpoint, and a dead-letter file holding only the pending entries.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { waitFor } from '../../../helpers/wait.js';
import { FileQueueStore } from '../../../../src/queue/file/file-queue-store.js';
import type { Outcome, QueueMessage } from '../../../../src/queue/contract.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function store(): FileQueueStore {
  const d = mkdtempSync(join(tmpdir(), 'svc-queue-space-'));
  dirs.push(d);
  return new FileQueueStore({ queuesDir: join(d, 'queues') });
}

/** Bytes a file holds and bytes the disk gives it (blocks); 0 and 0 when it is gone. */
function onDisk(path: string): { bytes: number; allocated: number } {
  try {
    const s = statSync(path);
    return { bytes: s.size, allocated: s.blocks * 512 };
  } catch {
    return { bytes: 0, allocated: 0 };
  }
}

const MESSAGES = 3000;
const PAYLOAD = { order: 'x'.repeat(1000) };

/** Appends MESSAGES, runs a worker deciding each, waits until all are settled; the worker keeps running. */
async function filledAndDrained(s: FileQueueStore, decide: (m: QueueMessage) => Outcome): Promise<void> {
  for (let i = 0; i < MESSAGES; i += 100)
    await Promise.all(
      Array.from({ length: 100 }, (_, j) =>
        s.append('acme', 'orders', { correlationId: `c${i + j}`, payload: PAYLOAD }),
      ),
    );
  let settled = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  await s.startConsumer('acme', 'orders', {
    pollIntervalMs: 10,
    handler: async (m) => {
      if (++settled === MESSAGES) setImmediate(done);
      return decide(m);
    },
  });
  await all;
}

describe('queue compaction and disk space', () => {
  it('a drained queue with a running worker: the segment is cut to 0 bytes and the consumer log to one checkpoint', async () => {
    const s = store();
    const p = s.paths('acme', 'orders');
    await filledAndDrained(s, () => ({ kind: 'ack' }));
    const full = onDisk(p.segment);
    assert.ok(
      full.bytes > MESSAGES * 1000 && full.allocated > MESSAGES * 1000,
      `segment holds the processed records: ${JSON.stringify(full)}`,
    );
    const results = (await s.compact()).queues;
    assert.deepEqual(
      results.map((r) => r.result),
      ['drained'],
    );
    assert.deepEqual(onDisk(p.segment), { bytes: 0, allocated: 0 });
    assert.ok(onDisk(p.consumerLog).bytes < 200, `consumer.log ${onDisk(p.consumerLog).bytes} bytes`);
    assert.ok(onDisk(p.consumerLog).allocated <= 8192);
    await s.close();
  });

  it('dead letters: after discarding all but one, compaction rewrites dlq.log down to the pending entry', async () => {
    const s = store();
    const p = s.paths('acme', 'orders');
    await filledAndDrained(s, (m) => (m.id % 100 === 0 ? { kind: 'dead', error: 'boom' } : { kind: 'ack' }));
    // The last handler has returned; its dead letter is written just after.
    await waitFor('every dead letter written', async () => (await s.listDeadLetters()).length === MESSAGES / 100);
    const dead = await s.listDeadLetters();
    const fullDlq = onDisk(p.deadLetters);
    for (const d of dead.slice(1)) await s.discardDeadLetter('acme', 'orders', d.id);
    await s.compact();
    const kept = onDisk(p.deadLetters);
    assert.ok(kept.bytes < fullDlq.bytes / 10, `dlq.log ${fullDlq.bytes} -> ${kept.bytes} bytes`);
    assert.ok(kept.bytes > 1000 && kept.bytes < 2 * 1100 + 500, 'one entry left, with its payload');
    assert.deepEqual(
      (await s.listDeadLetters()).map((d) => d.id),
      [dead[0]!.id],
    );
    assert.deepEqual(onDisk(p.segment), { bytes: 0, allocated: 0 });
    await s.close();
  });

  it('with no worker running (after a restart): the files of an empty queue are deleted, only the id counter stays', async () => {
    const s = store();
    const p = s.paths('acme', 'orders');
    await filledAndDrained(s, () => ({ kind: 'ack' }));
    await s.stopConsumer('acme', 'orders');
    const results = (await s.compact()).queues;
    assert.deepEqual(
      results.map((r) => r.result),
      ['deleted'],
    );
    for (const f of [p.segment, p.consumerLog, p.deadLetters])
      assert.deepEqual(onDisk(f), { bytes: 0, allocated: 0 }, f);
    await s.close();
  });
});
