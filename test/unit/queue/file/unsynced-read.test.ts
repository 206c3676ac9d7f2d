/**
 * A consumer never reads what its own process is still writing (queue-consumer.ts, unsyncedFrom):
 * records of a write in flight are visible in the file before the write returns (O_DSYNC), and a
 * poll that read them once delivered a message before its submission was answered and its
 * queue_enqueued row emitted. They come by the commit's offer instead.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileQueueStore } from '../../../../src/queue/file/file-queue-store.js';
import type { QueueMessage } from '../../../../src/queue/contract.js';
import { waitFor } from '../../../helpers/wait.js';

const root = mkdtempSync(join(tmpdir(), 'svc-unsynced-'));
after(() => rmSync(root, { recursive: true, force: true }));

describe('a consumer and its own process appending', () => {
  it('reads only up to where a write in flight begins, and delivers the rest once it is given', async () => {
    const store = new FileQueueStore({ queuesDir: join(root, 'queues') });
    try {
      const first = await store.append('acme', 'q', { correlationId: 'a', payload: { n: 1 } });
      const second = await store.append('acme', 'q', { correlationId: 'b', payload: { n: 2 } });
      // As if the second record's write were still in flight: the consumer may read the first only.
      let unsynced: number | undefined = second.byteOffset;
      const seen: QueueMessage[] = [];
      const c = await store.startConsumer('acme', 'q', {
        pollIntervalMs: 10,
        handler: async (m) => {
          seen.push(m);
          return { kind: 'ack' };
        },
        unsyncedFrom: () => unsynced,
      });
      assert.ok(c);
      await waitFor('the first delivery', () => seen.length === 1);
      // Several polls later, still only the first.
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(
        seen.map((m) => m.correlationId),
        ['a'],
      );
      assert.equal(first.id + 1, second.id);
      unsynced = undefined;
      await waitFor('the second delivery once the write is done', () => seen.length === 2);
      assert.deepEqual(
        seen.map((m) => m.correlationId),
        ['a', 'b'],
      );
    } finally {
      await store.close();
    }
  });

  it("the store gives its consumer the appender's in-flight offset: no message is delivered before its append is answered", async () => {
    const store = new FileQueueStore({ queuesDir: join(root, 'queues2') });
    try {
      const seen: string[] = [];
      const answered = new Set<string>();
      const early: string[] = [];
      const c = await store.startConsumer('acme', 'busy', {
        pollIntervalMs: 1,
        handler: async (m) => {
          seen.push(m.correlationId);
          if (!answered.has(m.correlationId)) early.push(m.correlationId);
          return { kind: 'ack' };
        },
      });
      assert.ok(c);
      const ids: string[] = [];
      // Rounds of appends while the consumer polls every millisecond: some poll falls inside a write.
      for (let round = 0; round < 20; round++) {
        const batch = Array.from({ length: 50 }, (_, i) => `m-${round}-${i}`);
        ids.push(...batch);
        await Promise.all(
          batch.map(async (id) => {
            await store.append('acme', 'busy', { correlationId: id, payload: { pad: 'x'.repeat(2000) } });
            answered.add(id);
          }),
        );
      }
      await waitFor('every delivery', () => seen.length === ids.length);
      assert.deepEqual(early, [], 'delivered before their append was answered');
      assert.deepEqual(seen, ids);
    } finally {
      await store.close();
    }
  });
});
