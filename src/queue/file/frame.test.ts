import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeFrames, encodeFrame, FRAME_HEADER_BYTES } from './frame.js';

describe('record framing', () => {
  it('decodes what it encodes, with offsets', () => {
    const a = encodeFrame({ id: 1 });
    const b = encodeFrame({ id: 2, payload: 'é' });
    const r = decodeFrames(Buffer.concat([a, b]), 100);
    assert.equal(r.stop, 'end');
    assert.deepEqual(
      r.frames.map((f) => [f.offset, f.end, f.value]),
      [
        [100, 100 + a.length, { id: 1 }],
        [100 + a.length, 100 + a.length + b.length, { id: 2, payload: 'é' }],
      ],
    );
  });

  it('stops at half a record and reports it incomplete', () => {
    const a = encodeFrame({ id: 1 });
    const b = encodeFrame({ id: 2 });
    const r = decodeFrames(Buffer.concat([a, b.subarray(0, b.length - 3)]));
    assert.equal(r.frames.length, 1);
    assert.equal(r.validBytes, a.length);
    assert.equal(r.stop, 'incomplete');
    assert.equal(r.needBytes, b.length);
  });

  it('stops at a flipped byte and reports it corrupt', () => {
    const a = encodeFrame({ id: 1 });
    const b = encodeFrame({ id: 2 });
    b[FRAME_HEADER_BYTES + 2] ^= 0xff;
    const r = decodeFrames(Buffer.concat([a, b, a]));
    assert.equal(r.frames.length, 1);
    assert.equal(r.stop, 'corrupt');
  });

  it('treats garbage without the magic as corrupt', () => {
    const r = decodeFrames(Buffer.from('garbage garbage garbage'));
    assert.equal(r.frames.length, 0);
    assert.equal(r.stop, 'corrupt');
  });

  it('without parsing, checks every frame as a parse does and stops at the same place', () => {
    const a = encodeFrame({ id: 1 });
    const b = encodeFrame({ id: 2, payload: 'é' });
    const flipped = Buffer.from(b);
    flipped[FRAME_HEADER_BYTES + 2] ^= 0xff;
    const badLength = Buffer.from(b);
    badLength.writeUInt32LE(0xffffffff, 4);
    const cases: [string, Buffer][] = [
      ['whole records', Buffer.concat([a, b, a])],
      ['half a record', Buffer.concat([a, b.subarray(0, b.length - 3)])],
      ['a header cut short', Buffer.concat([a, b.subarray(0, FRAME_HEADER_BYTES - 1)])],
      ['a flipped body byte', Buffer.concat([a, flipped, a])],
      ['a length past the limit', Buffer.concat([a, badLength])],
      ['garbage', Buffer.from('garbage garbage garbage')],
      ['nothing', Buffer.alloc(0)],
    ];
    for (const [name, buf] of cases) {
      const parsed = decodeFrames(buf, 7);
      const counted = decodeFrames(buf, 7, false);
      assert.deepEqual(
        counted.frames.map((f) => [f.offset, f.end, f.value]),
        parsed.frames.map((f) => [f.offset, f.end, undefined]),
        name,
      );
      assert.deepEqual(
        [counted.validBytes, counted.stop, counted.needBytes],
        [parsed.validBytes, parsed.stop, parsed.needBytes],
        name,
      );
    }
  });
});
