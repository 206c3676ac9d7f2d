import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { fillBut, mountTmpfs, unmountTmpfs } from '../../../helpers/tmpfs.js';
import { waitFor } from '../../../helpers/wait.js';
import { ConsumerLog, type ConsumerLogRecord } from '../../../../src/queue/file/consumer-log.js';
import { addDeadLetter, readDeadLetters } from '../../../../src/queue/file/dead-letters.js';
import { scanFile } from '../../../../src/queue/file/file-io.js';
import { queuePaths } from '../../../../src/queue/file/queue-paths.js';
import { FileQueueStore } from '../../../../src/queue/file/file-queue-store.js';

/**
 * A write that runs into a full disk is cut short: part of a record reaches the file. Whatever is
 * appended once space is back must still be readable, so the part has to be cut off first.
 */
describe('an append cut short by a full disk leaves nothing torn behind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-torn-'));
  const ballast = join(dir, 'ballast');
  let mounted = false;

  before(() => {
    mounted = mountTmpfs(dir, 1);
  });
  after(async () => {
    if (mounted) await unmountTmpfs(dir);
    rmSync(dir, { recursive: true, force: true });
  });
  /** A payload larger than what is left, so its write stops part way. */
  const big = 'x'.repeat(64 * 1024);

  function skipUnlessMounted(t: TestContext): boolean {
    if (!mounted) t.skip('needs root to mount a small tmpfs');
    return !mounted;
  }

  it('the consumer log: records appended after the failed one are found on the next open', async (t) => {
    if (skipUnlessMounted(t)) return;
    const paths = queuePaths(join(dir, 'queues'), 'acme', 'log');
    mkdirSync(paths.dir, { recursive: true });
    const { log } = await ConsumerLog.open(paths.consumerLog, paths.segment);
    await log.append([{ t: 'ck', ck: { off: 10, first: 1, n: 1 } }], true);
    fillBut(ballast, dir, 16 * 1024);
    const entry = {
      id: 2,
      correlation_id: 'c2',
      enqueued_at: '2026-01-01T00:00:00.000Z',
      payload: big,
      attempts: 1,
      due: 0,
    };
    await assert.rejects(log.append([{ t: 'retry', entry }], true), /ENOSPC/);
    rmSync(ballast);
    await log.append([{ t: 'ck', ck: { off: 20, first: 1, n: 2 } }], true);
    await log.close();
    const scan = await scanFile<ConsumerLogRecord>(paths.consumerLog);
    assert.equal(scan.stop, 'end', 'no torn record in the file');
    assert.deepEqual(
      scan.frames.map((f) => f.value),
      [
        { t: 'ck', ck: { off: 10, first: 1, n: 1 } },
        { t: 'ck', ck: { off: 20, first: 1, n: 2 } },
      ],
    );
  });

  it('the segment: a record the consumer read before a failed batch was cut back is never taken back, so no acknowledged message is lost', async (t) => {
    if (skipUnlessMounted(t)) return;
    const store = new FileQueueStore({ queuesDir: join(dir, 'queues') });
    const delivered = new Map<string, number>();
    const answers = new Map<string, 'ok' | 'refused'>();
    try {
      await store.append('acme', 'seg', { correlationId: 'warm', payload: 0 });
      // Polling every millisecond, the consumer reads the segment while failed writes are in it.
      await store.startConsumer('acme', 'seg', {
        pollIntervalMs: 1,
        handler: async (m) => {
          delivered.set(m.correlationId, (delivered.get(m.correlationId) ?? 0) + 1);
          return { kind: 'ack' };
        },
      });
      fillBut(ballast, dir, 256 * 1024);
      const pad = 'p'.repeat(3000);
      let refused = 0;
      const appender = async (a: number): Promise<void> => {
        for (let i = 0; refused < 1000; i++) {
          const cid = `${a}-${i}`;
          try {
            await store.append('acme', 'seg', { correlationId: cid, payload: { pad } });
            answers.set(cid, 'ok');
          } catch {
            answers.set(cid, 'refused');
            refused++;
          }
        }
      };
      await Promise.all(Array.from({ length: 16 }, (_, a) => appender(a)));
      rmSync(ballast);
      for (let i = 0; i < 50; i++) {
        await store.append('acme', 'seg', { correlationId: `after-${i}`, payload: { pad } });
        answers.set(`after-${i}`, 'ok');
      }
      const acked = [...answers].filter(([, a]) => a === 'ok').map(([cid]) => cid);
      await waitFor(
        'every acknowledged message delivered',
        () => acked.every((cid) => delivered.has(cid)),
        10_000,
      ).catch(() => undefined);
      assert.deepEqual(
        acked.filter((cid) => !delivered.has(cid)),
        [],
        'acknowledged but never delivered',
      );
      assert.deepEqual(
        [...answers].filter(([cid, a]) => a === 'refused' && delivered.has(cid)),
        [],
        'refused but delivered',
      );
      assert.equal((await scanFile(store.paths('acme', 'seg').segment)).stop, 'end');
    } finally {
      await store.close();
    }
  });

  it('the dead-letter file: a dead letter written after the failed one is listed', async (t) => {
    if (skipUnlessMounted(t)) return;
    const paths = queuePaths(join(dir, 'queues'), 'acme', 'dlq');
    const dead = (id: number, payload: unknown) => ({
      id,
      payload,
      enqueued_at: '2026-01-01T00:00:00.000Z',
      failed_at: '2026-01-01T00:00:01.000Z',
      attempts: 1,
      last_error: 'boom',
    });
    await addDeadLetter(paths, dead(1, 'first'));
    fillBut(ballast, dir, 16 * 1024);
    await assert.rejects(addDeadLetter(paths, dead(2, big)), /ENOSPC/);
    rmSync(ballast);
    await addDeadLetter(paths, dead(3, 'after'));
    assert.deepEqual(
      (await readDeadLetters(paths)).pending.map((d) => d.id),
      [1, 3],
    );
  });
});
