// The stored time formats are exactly Date's ISO text, whatever order the instants come in: the
// per-second caches never hand out a stale second or a wrong millisecond.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isoMillis, isoSeconds, msSince } from './clock.js';

const INSTANTS = [
  Date.UTC(2026, 10, 29, 0, 18, 4, 7),
  Date.UTC(2026, 10, 29, 0, 18, 4, 7), // the same millisecond twice
  Date.UTC(2026, 10, 29, 0, 18, 4, 45),
  Date.UTC(2026, 10, 29, 0, 18, 4, 999),
  Date.UTC(2026, 10, 29, 0, 18, 5, 0), // the next second
  Date.UTC(2026, 10, 29, 0, 18, 4, 120), // back to the one before
  Date.UTC(2026, 11, 31, 23, 59, 59, 999),
  Date.UTC(2027, 0, 1, 0, 0, 0, 1), // a new year
  0,
  -1, // before the epoch
  1.5, // not a whole millisecond: Date truncates
  Date.UTC(2026, 10, 29, 0, 18, 4, 7) + 0.25,
];

test('isoMillis is new Date(ms).toISOString(), in any order of instants', () => {
  for (const ms of INSTANTS) assert.equal(isoMillis(ms), new Date(ms).toISOString(), String(ms));
  const now = isoMillis();
  assert.match(now, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('isoSeconds is the ISO text without its milliseconds, in any order of instants', () => {
  for (const ms of INSTANTS) {
    const second = new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    assert.equal(isoSeconds(ms), second, String(ms));
  }
});

test('msSince is the time since a performance.now() reading, to the microsecond, never negative', async () => {
  const started = performance.now();
  await new Promise((r) => setTimeout(r, 5));
  const ms = msSince(started);
  assert.ok(ms >= 4 && ms < 5_000, String(ms));
  assert.equal(Math.round(ms * 1000) / 1000, ms);
  assert.ok(String(ms).split('.')[1] === undefined || String(ms).split('.')[1]!.length <= 3, String(ms));
  assert.ok(msSince(performance.now()) >= 0);
});
