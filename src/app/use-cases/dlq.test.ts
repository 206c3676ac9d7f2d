import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OVERDUE_GRACE_MS, overdueRetries, type QueueFigures } from './dlq.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const S = 1000;

type Case = readonly [
  what: string,
  queue: Pick<QueueFigures, 'worker' | 'waitingMs' | 'retries'>,
  expected: ReturnType<typeof overdueRetries>,
];

const due = (...agoMs: number[]) => agoMs.map((ago, i) => ({ id: i + 1, attempts: 1, dueMs: NOW - ago }));

const CASES: readonly Case[] = [
  ['no retries, no worker', { worker: undefined, retries: [] }, undefined],
  ['a retry due later, no worker', { worker: undefined, retries: due(-60 * S) }, undefined],
  ['a retry due 4 s ago, within the grace', { worker: undefined, retries: due(4 * S) }, undefined],
  ['a retry due exactly the grace ago', { worker: undefined, retries: due(OVERDUE_GRACE_MS) }, undefined],
  [
    'a retry due 1 ms more than the grace ago',
    { worker: undefined, retries: due(OVERDUE_GRACE_MS + 1) },
    { count: 1, oldestDueMs: NOW - OVERDUE_GRACE_MS - 1 },
  ],
  [
    'a retry due 10 s ago, no worker',
    { worker: undefined, retries: due(10 * S) },
    { count: 1, oldestDueMs: NOW - 10 * S },
  ],
  ['a retry due 10 s ago, a worker runs the queue', { worker: 'pid 7 on h', retries: due(10 * S) }, undefined],
  [
    'a retry due 10 s ago, the queue waits for a slot of the pool',
    { worker: undefined, waitingMs: 3 * S, retries: due(10 * S) },
    undefined,
  ],
  [
    'of three retries two overdue, listed in any order: counted, the oldest named',
    { worker: undefined, retries: due(10 * S, -30 * S, 3_600 * S, 2 * S) },
    { count: 2, oldestDueMs: NOW - 3_600 * S },
  ],
];

for (const [what, queue, expected] of CASES)
  test(`overdue retries: ${what}`, () => {
    assert.deepEqual(overdueRetries(queue, NOW), expected);
  });

test('overdue retries: the grace can be given', () => {
  assert.deepEqual(overdueRetries({ worker: undefined, retries: due(2 * S) }, NOW, S), {
    count: 1,
    oldestDueMs: NOW - 2 * S,
  });
  assert.equal(overdueRetries({ worker: undefined, retries: due(2 * S) }, NOW), undefined);
});
