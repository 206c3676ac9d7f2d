import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { encodeFrame } from './frame.js';
import { scanFile } from './file-io.js';
import { FileQueueStore } from './file-queue-store.js';
import { repairSegmentTail } from './segment-appender.js';
import { readTailHint, TAIL_HINT_EVERY_BYTES, writeTailHint } from './tail-hint.js';
import type { SegmentRecord } from './segment-record.js';

const dirs: string[] = [];
function tempQueues(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-tail-hint-'));
  dirs.push(d);
  return join(d, 'queues');
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A record cut short, as a writer killed mid-write leaves it. */
const TORN = encodeFrame({
  id: 999_999,
  correlation_id: 'torn',
  enqueued_at: 'x',
  attempts: 0,
  payload: 'half',
}).subarray(0, 30);
/** Payload of about 4 KiB: a few hundred records pass TAIL_HINT_EVERY_BYTES. */
const PAYLOAD = { text: 'x'.repeat(4000) };

/** A queue with more than TAIL_HINT_EVERY_BYTES appended and its appender closed (which leaves the hint at the last record). */
async function filledQueue(
  flow: string,
): Promise<{ queuesDir: string; segment: string; hintPath: string; lastId: number }> {
  const queuesDir = tempQueues();
  const store = new FileQueueStore({ queuesDir });
  let lastId = 0;
  const paths = store.paths('acme', flow);
  while (!existsSync(paths.segment) || statSync(paths.segment).size < TAIL_HINT_EVERY_BYTES + 64 * 1024) {
    const batch = await Promise.all(
      Array.from({ length: 32 }, (_, i) => store.append('acme', flow, { correlationId: `c${i}`, payload: PAYLOAD })),
    );
    lastId = Math.max(lastId, ...batch.map((r) => r.id));
  }
  await store.close();
  return { queuesDir, segment: paths.segment, hintPath: paths.tailHint, lastId };
}

async function repair(segment: string, hintPath: string): Promise<{ validEnd: number; checkedFrom: number }> {
  const fh = await open(segment, 'r+');
  try {
    return await repairSegmentTail(fh, hintPath);
  } finally {
    await fh.close();
  }
}

describe('the segment tail hint', () => {
  it('a clean close leaves the hint at the last record, and the tail check then reads only what follows it', async () => {
    const q = await filledQueue('clean');
    const hint = await readTailHint(q.hintPath);
    const size = statSync(q.segment).size;
    assert.deepEqual(hint && { end: hint.end, id: hint.id }, { end: size, id: q.lastId });
    appendFileSync(q.segment, TORN);
    const r = await repair(q.segment, q.hintPath);
    assert.equal(r.checkedFrom, size, 'checked from the end of the hinted record, not from 0');
    assert.equal(r.validEnd, size);
    assert.equal(statSync(q.segment).size, size, 'the torn tail was cut');
  });

  it('a hint left mid-way (a crash after it): the check starts there and still finds the torn tail after later records', async () => {
    const q = await filledQueue('stale');
    const size = statSync(q.segment).size;
    const frames = (await scanFile<SegmentRecord>(q.segment)).frames;
    const mid = frames[Math.floor(frames.length / 2)]!;
    await writeTailHint(q.hintPath, { offset: mid.offset, end: mid.end, id: mid.value.id });
    appendFileSync(q.segment, TORN);
    const r = await repair(q.segment, q.hintPath);
    assert.deepEqual(r, { validEnd: size, checkedFrom: mid.end });
    assert.equal(statSync(q.segment).size, size);
  });

  // Each case must fall back to reading the whole segment, and still cut the torn tail.
  const untrusted: {
    name: string;
    spoil: (
      q: { segment: string; hintPath: string },
      frames: { offset: number; end: number; value: SegmentRecord }[],
    ) => Promise<void> | void;
  }[] = [
    { name: 'no hint file', spoil: (q) => rmSync(q.hintPath) },
    { name: 'a hint torn in a crash', spoil: (q) => truncateSync(q.hintPath, 10) },
    { name: 'a hint of garbage', spoil: (q) => writeFileSync(q.hintPath, 'not a frame') },
    {
      name: 'a hint past the end of the segment',
      spoil: async (q, f) =>
        writeTailHint(q.hintPath, { offset: f.at(-1)!.end + 100, end: f.at(-1)!.end + 200, id: 1 }),
    },
    {
      name: 'a hint off a record boundary',
      spoil: async (q, f) =>
        writeTailHint(q.hintPath, { offset: f[3]!.offset + 1, end: f[3]!.end, id: f[3]!.value.id }),
    },
    {
      name: 'a hint naming another id at that place (the segment emptied and refilled since)',
      spoil: async (q, f) =>
        writeTailHint(q.hintPath, { offset: f[3]!.offset, end: f[3]!.end, id: f[3]!.value.id + 1 }),
    },
  ];
  for (const c of untrusted) {
    it(`${c.name}: the whole segment is checked`, async () => {
      const q = await filledQueue('spoilt');
      const size = statSync(q.segment).size;
      await c.spoil(q, (await scanFile<SegmentRecord>(q.segment)).frames);
      appendFileSync(q.segment, TORN);
      assert.deepEqual(await repair(q.segment, q.hintPath), { validEnd: size, checkedFrom: 0 });
      assert.equal(statSync(q.segment).size, size);
    });
  }

  it('through the store: after a torn tail, the next append lands right after the last whole record and nothing is lost', async () => {
    const q = await filledQueue('store');
    const size = statSync(q.segment).size;
    appendFileSync(q.segment, TORN);
    const store = new FileQueueStore({ queuesDir: q.queuesDir });
    const r = await store.append('acme', 'store', { correlationId: 'after', payload: 1 });
    assert.equal(r.byteOffset, size, 'the torn tail was cut before the new record');
    await store.close();
    const scan = await scanFile<SegmentRecord>(q.segment);
    assert.equal(scan.stop, 'end');
    const ids = scan.frames.map((f) => f.value.id);
    assert.equal(new Set(ids).size, ids.length, 'no id twice');
    assert.equal(ids.at(-1), r.id);
    assert.ok(ids.includes(q.lastId));
  });
});
