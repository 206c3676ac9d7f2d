// The writer's statements leave out the columns null in every row of a chunk: which columns those
// are, what is bound then, and the statement's VALUES, checked against the packed rows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ROW_WIDTH, type RowColumns } from '../contracts/index.js';
import { boundValues, nullColumns, valuesTuple } from './event-inserts.js';

/** A packed row whose column c holds `c` unless c is in `nulls`. */
function packed(nulls: readonly number[]): RowColumns {
  return Array.from({ length: ROW_WIDTH }, (_, c) => (nulls.includes(c) ? null : c));
}

test('nullColumns: a column is left out only when it is null in every row of the chunk', () => {
  const flat: RowColumns = [...packed([4, 6, 9, 10, 13]), ...packed([4, 6, 9, 12, 13]), ...packed([4, 6, 13])];
  assert.equal(nullColumns(flat, 0, 3), (1 << 4) | (1 << 6) | (1 << 13));
  assert.equal(nullColumns(flat, 0, 2), (1 << 4) | (1 << 6) | (1 << 9) | (1 << 13));
  assert.equal(nullColumns(flat, ROW_WIDTH, 1), (1 << 4) | (1 << 6) | (1 << 9) | (1 << 12) | (1 << 13));
  assert.equal(nullColumns(packed([]), 0, 1), 0);
});

test('nullColumns: 0 and empty text are values, not nulls', () => {
  const row = packed([]);
  row[7] = 0;
  row[10] = '';
  assert.equal(nullColumns(row, 0, 1), 0);
});

test('boundValues: every value outside the mask, row by row, in column order', () => {
  const flat: RowColumns = [...packed([2, 5]), ...packed([2])];
  const mask = nullColumns(flat, 0, 2);
  assert.equal(mask, 1 << 2);
  const values = boundValues(flat, 0, 2, mask);
  assert.equal(values.length, 2 * (ROW_WIDTH - 1));
  const expected = [...flat.slice(0, ROW_WIDTH), ...flat.slice(ROW_WIDTH)].filter((_, k) => k % ROW_WIDTH !== 2);
  assert.deepEqual(values, expected);
});

test('valuesTuple: a NULL literal in each left-out column, a parameter elsewhere', () => {
  const tuple = valuesTuple((1 << 0) | (1 << 13));
  const parts = tuple.slice(1, -1).split(', ');
  assert.equal(parts.length, ROW_WIDTH);
  assert.equal(parts[0], 'NULL');
  assert.equal(parts[13], 'NULL');
  assert.equal(parts.filter((p) => p === '?').length, ROW_WIDTH - 2);
  assert.equal(valuesTuple(0), `(${Array.from({ length: ROW_WIDTH }, () => '?').join(', ')})`);
});
