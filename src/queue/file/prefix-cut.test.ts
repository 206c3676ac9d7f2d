import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { scanFile } from './file-io.js';
import type { QueueMessage } from '../contract.js';
import { FileQueueStore } from './file-queue-store.js';
import type { SegmentRecord } from './segment-record.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempQueues(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-prefix-cut-'));
  dirs.push(d);
  return d;
}

/** Cut whenever anything is processed (the defaults wait for 64 MiB). */
const CUT_ALWAYS = { minPrefixBytes: 1, maxTailBytes: 1024 * 1024 };

const segmentIds = async (store: FileQueueStore, flow: string) =>
  (await scanFile<SegmentRecord>(store.paths('acme', flow).segment)).frames.map((f) => f.value.id);

async function appendN(store: FileQueueStore, flow: string, from: number, to: number): Promise<number[]> {
  const ids: number[] = [];
  for (let n = from; n <= to; n++)
    ids.push((await store.append('acme', flow, { correlationId: `c${n}`, payload: { n } })).id);
  return ids;
}

async function waitUntil(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !ok();) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('giving back the processed prefix of a queue that is not empty', () => {
  it('a queue no worker runs: compaction keeps only the records not yet delivered, and a worker delivers exactly those', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues(), prefixCut: CUT_ALWAYS });
    const first = await appendN(store, 'q', 1, 6);
    const seen: number[] = [];
    await store.startConsumer('acme', 'q', {
      pollIntervalMs: 10,
      handler: async (m) => (seen.push(m.id), { kind: 'ack' }),
    });
    await waitUntil('six delivered', () => seen.length === 6);
    await store.stopConsumer('acme', 'q');
    const tail = await appendN(store, 'q', 7, 10);
    assert.deepEqual((await store.compact()).queues, [{ tenant: 'acme', flow: 'q', result: 'trimmed' }]);
    assert.deepEqual(await segmentIds(store, 'q'), tail, 'only the undelivered records are left');
    const stats = await store.stats('acme', 'q');
    assert.deepEqual([stats.total, stats.processed, stats.pending], [4, 0, 4]);
    const later = await appendN(store, 'q', 11, 12);
    await store.startConsumer('acme', 'q', {
      pollIntervalMs: 10,
      handler: async (m) => (seen.push(m.id), { kind: 'ack' }),
    });
    await waitUntil('all delivered', () => seen.length === 12);
    assert.deepEqual(seen, [...first, ...tail, ...later], 'each once, in order');
    assert.deepEqual(
      (await store.compact()).queues,
      [{ tenant: 'acme', flow: 'q', result: 'drained' }],
      'drained once empty',
    );
    await store.close();
  });

  it('a running worker with records read ahead: the cut happens between deliveries, and every record is delivered once, in order', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues(), prefixCut: CUT_ALWAYS });
    const ids = await appendN(store, 'r', 1, 10);
    const seen: QueueMessage[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await store.startConsumer('acme', 'r', {
      pollIntervalMs: 10,
      handler: async (m) => {
        seen.push(m);
        if (m.id === ids[6]) await held; // the 7th waits until compaction is asked for
        return { kind: 'ack' };
      },
    });
    await waitUntil('the 7th in its handler', () => seen.length === 7);
    const compaction = store.compact().then((pass) => pass.queues);
    // Let the pass reach the worker (it lists the queues first), then let the 7th finish.
    setTimeout(release, 200);
    assert.deepEqual(await compaction, [{ tenant: 'acme', flow: 'r', result: 'trimmed' }]);
    const more = await appendN(store, 'r', 11, 13);
    await waitUntil('all delivered', () => seen.length === 13);
    assert.deepEqual(
      seen.map((m) => m.id),
      [...ids, ...more],
    );
    assert.deepEqual(
      seen.map((m) => (m.payload as { n: number }).n),
      Array.from({ length: 13 }, (_, i) => i + 1),
    );
    await store.close();
  });

  it('leaves the segment whole when the prefix is shorter than asked, or the tail longer', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues(), prefixCut: { minPrefixBytes: 1, maxTailBytes: 10 } });
    const seen: number[] = [];
    const ids = await appendN(store, 't', 1, 4);
    await store.startConsumer('acme', 't', {
      pollIntervalMs: 10,
      handler: async (m) => (seen.push(m.id), { kind: 'ack' }),
    });
    await waitUntil('four delivered', () => seen.length === 4);
    await store.stopConsumer('acme', 't');
    await appendN(store, 't', 5, 6);
    assert.deepEqual(
      (await store.compact()).queues,
      [{ tenant: 'acme', flow: 't', result: 'kept' }],
      'a tail over 10 bytes is not copied',
    );
    const big = new FileQueueStore({ queuesDir: store.queuesDir, prefixCut: { minPrefixBytes: 1024 * 1024 } });
    assert.deepEqual(
      (await big.compact()).queues,
      [{ tenant: 'acme', flow: 't', result: 'kept' }],
      'a prefix under 1 MiB is not cut',
    );
    assert.equal((await segmentIds(store, 't')).length, 6);
    assert.deepEqual(seen, ids);
    await store.close();
    await big.close();
  });

  it('removes a copy left behind by a cut that died before its rename', async () => {
    const store = new FileQueueStore({ queuesDir: tempQueues(), prefixCut: CUT_ALWAYS });
    await appendN(store, 's', 1, 3);
    await store.startConsumer('acme', 's', {
      pollIntervalMs: 10,
      handler: async (m) => ({ kind: m.id >= 0 ? 'ack' : 'ack' }),
    });
    await waitUntil('three delivered', () => existsSync(store.paths('acme', 's').consumerLog));
    await new Promise((r) => setTimeout(r, 100));
    await store.stopConsumer('acme', 's');
    await appendN(store, 's', 4, 4);
    const stray = `${store.paths('acme', 's').segment}.tmp-999999`;
    writeFileSync(stray, 'half a copy');
    assert.deepEqual((await store.compact()).queues, [{ tenant: 'acme', flow: 's', result: 'trimmed' }]);
    assert.deepEqual(
      readdirSync(store.paths('acme', 's').dir).filter((f) => f.includes('.tmp-')),
      [],
    );
    await store.close();
  });
});
