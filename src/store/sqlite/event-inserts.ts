/**
 * The event writer's INSERTs of a packed batch (log.db `events`): multi-row statements, largest
 * first, bound straight from the packed columns.
 *
 * Binding is most of a row's cost (better-sqlite3 reads and type-checks each value through N-API,
 * about 700 instructions a value, whatever it is), and many columns are null in every row of a
 * run of rows: `step` on boundary rows, `payload` at `event_only`, `outcome`, `reason` and
 * `failed_step` on most deliveries. So each chunk of rows is written by a statement with a NULL
 * literal in the columns null in all its rows, and binds only the others. Statements are prepared
 * once per (rows, null columns) and kept; past MAX_SHAPES a chunk takes the all-bound statement.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import { ROW_WIDTH, type RowColumns } from '../contracts/index.js';

/** Rows per multi-row INSERT, largest first; the last is 1 so that every row fits one. */
export const CHUNKS = [128, 32, 8, 1] as const;

/** Statements kept per chunk size beyond the all-bound one: a handful of shapes is the usual. */
const MAX_SHAPES = 64;

const ALL_COLUMNS = (1 << ROW_WIDTH) - 1;

/**
 * The columns (bit c for column c) that are null in each of the `rows` rows starting at `from`
 * (an index into `flat`, at a row's start).
 */
export function nullColumns(flat: Readonly<RowColumns>, from: number, rows: number): number {
  let mask = ALL_COLUMNS;
  for (let r = 0, base = from; r < rows && mask !== 0; r++, base += ROW_WIDTH) {
    for (let c = 0; c < ROW_WIDTH; c++) {
      if ((mask & (1 << c)) !== 0 && flat[base + c] !== null) mask &= ~(1 << c);
    }
  }
  return mask;
}

/** The values of the `rows` rows at `from` without the columns of `mask`, in order. */
export function boundValues(flat: Readonly<RowColumns>, from: number, rows: number, mask: number): unknown[] {
  const out: unknown[] = [];
  for (let r = 0, base = from; r < rows; r++, base += ROW_WIDTH) {
    for (let c = 0; c < ROW_WIDTH; c++) if ((mask & (1 << c)) === 0) out.push(flat[base + c]);
  }
  return out;
}

/** `(?, NULL, ?, ...)`: one row's VALUES with a NULL literal in the columns of `mask`. */
export function valuesTuple(mask: number): string {
  return `(${Array.from({ length: ROW_WIDTH }, (_, c) => ((mask & (1 << c)) !== 0 ? 'NULL' : '?')).join(', ')})`;
}

export class EventInserts {
  readonly #db: Db;
  /** The INSERT up to VALUES, its columns in the packed order. */
  readonly #head: string;
  /** Per chunk size: statements by null-column mask (0: every column bound). */
  readonly #shapes = new Map<number, Map<number, Statement>>();

  constructor(db: Db, insertHead: string) {
    this.#db = db;
    this.#head = insertHead;
    for (const rows of CHUNKS) this.#shapes.set(rows, new Map([[0, this.#prepare(rows, 0)]]));
  }

  /**
   * Inserts the whole rows of `flat` up to `end` (a multiple of ROW_WIDTH), in order, inside the
   * caller's transaction. @returns the id of the last row inserted (0 when none)
   */
  insert(flat: Readonly<RowColumns>, end: number): number {
    let i = 0;
    let last = 0;
    for (const rows of CHUNKS) {
      const width = rows * ROW_WIDTH;
      for (; i + width <= end; i += width) {
        const mask = nullColumns(flat, i, rows);
        const statement = this.#statement(rows, mask);
        const values = statement.mask === 0 ? flat.slice(i, i + width) : boundValues(flat, i, rows, statement.mask);
        last = Number(statement.run.run(values).lastInsertRowid);
      }
    }
    return last;
  }

  #statement(rows: number, mask: number): { run: Statement; mask: number } {
    const shapes = this.#shapes.get(rows)!;
    let run = shapes.get(mask);
    if (run === undefined) {
      if (shapes.size > MAX_SHAPES) return { run: shapes.get(0)!, mask: 0 };
      run = this.#prepare(rows, mask);
      shapes.set(mask, run);
    }
    return { run, mask };
  }

  #prepare(rows: number, mask: number): Statement {
    const tuple = valuesTuple(mask);
    return this.#db.prepare(`${this.#head} ${Array.from({ length: rows }, () => tuple).join(', ')}`);
  }
}
