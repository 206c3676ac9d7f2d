import assert from 'node:assert/strict';
import {
  appendFileSync,
  mkdtempSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
  openSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { encodeFrame } from './frame.js';
import { SegmentRecordCount } from './record-count.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-record-count-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const record = (id: number) =>
  encodeFrame({
    id,
    correlation_id: `c${id}`,
    enqueued_at: '2026-01-01T00:00:00.000Z',
    attempts: 0,
    payload: { n: id },
  });
const records = (from: number, to: number) =>
  Buffer.concat(Array.from({ length: to - from + 1 }, (_, i) => record(from + i)));
let n = 0;
const segment = () => join(dir, `segment-${++n}.log`);

describe('SegmentRecordCount', () => {
  it('counts whole records, and later only what was appended since', async () => {
    const path = segment();
    writeFileSync(path, records(1, 10));
    const count = new SegmentRecordCount();
    assert.equal(await count.records(path), 10);
    // Spoil a counted record in the middle (a checksum byte of the 5th): a fresh count stops there,
    // the kept count does not read it again.
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.from([0xff]), 0, 1, records(1, 4).length + 9);
    closeSync(fd);
    appendFileSync(path, records(11, 12));
    assert.equal(await count.records(path), 12);
    assert.equal(await new SegmentRecordCount().records(path), 4, 'a full read stops at the spoiled record');
  });

  it('starts over after a drain refilled the file in place, a replaced file, or a shorter file', async () => {
    const path = segment();
    writeFileSync(path, records(1, 5));
    const count = new SegmentRecordCount();
    assert.equal(await count.records(path), 5);
    truncateSync(path, 0); // a drain, then new messages with new ids, longer than before
    appendFileSync(path, records(6, 12));
    assert.equal(await count.records(path), 7);
    const other = `${path}.new`;
    writeFileSync(other, records(13, 14));
    renameSync(other, path);
    assert.equal(await count.records(path), 2);
    truncateSync(path, record(13).length);
    assert.equal(await count.records(path), 1);
  });

  it('leaves a record being written (or torn) uncounted until it is whole', async () => {
    const path = segment();
    const third = record(3);
    writeFileSync(path, Buffer.concat([records(1, 2), third.subarray(0, 20)]));
    const count = new SegmentRecordCount();
    assert.equal(await count.records(path), 2);
    appendFileSync(path, third.subarray(20));
    assert.equal(await count.records(path), 3);
  });

  it('a missing segment has no records', async () => {
    const count = new SegmentRecordCount();
    assert.equal(await count.records(join(dir, 'nothing.log')), 0);
  });
});
