/**
 * The day partitions of the PostgreSQL `events` table (migration 0003): `events_YYYYMMDD` holds the
 * rows whose `ts` falls on that UTC day. The writer creates them ahead of their rows; retention
 * drops a whole day at once. Both work under one advisory lock per schema, so nodes never race
 * over the same partition.
 */
import type { PgDb, PgTx } from './pg-db.js';

/** The two-key advisory lock of partition changes: a fixed class, and the schema's name hashed by the server. */
const PARTITION_LOCK_CLASS = 0x5356_4550; // 'SVEP'

/**
 * Longest a partition change waits for the table's lock, in ms. Creating or dropping a partition
 * locks `events` itself, and inserts queue behind that request: a long read holding the table must
 * not stall the writers for longer than this. A change that gave up is tried again later.
 */
const PARTITION_LOCK_TIMEOUT_MS = 1000;

/** SQLSTATE of a lock not granted within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

const DAY_MS = 86_400_000;
const ISO_DAY = /^\d{4}-\d{2}-\d{2}/;

/** The UTC day (`YYYY-MM-DD`) a `ts` starts with, when it is a real calendar day; undefined otherwise (the row goes to events_default). */
export function partitionDay(ts: string): string | undefined {
  const day = ISO_DAY.exec(ts)?.[0];
  if (day === undefined) return undefined;
  const ms = Date.parse(`${day}T00:00:00Z`);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== day ? undefined : day;
}

/** `events_YYYYMMDD` of a day `YYYY-MM-DD` (checked by partitionDay, so it is safe in SQL text). */
export function partitionName(day: string): string {
  return `events_${day.replaceAll('-', '')}`;
}

/** The day after `day`. */
function nextDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
}

/** The UTC day of `nowMs` and the next one: created ahead, so no row waits on a CREATE at midnight. */
export function daysAhead(nowMs: number): string[] {
  const today = new Date(nowMs).toISOString().slice(0, 10);
  return [today, nextDay(today)];
}

/**
 * Creates the partitions of `days` that do not exist yet, in one transaction under the partition
 * lock (idempotent: another node may have made them meanwhile). Rows of such a day already in
 * events_default (its partition could not be created when they came) are moved into it.
 * @throws the lock-timeout error (SQLSTATE 55P03) when the table stayed busy; nothing is changed then
 */
export async function createDayPartitions(db: PgDb, days: readonly string[]): Promise<void> {
  await db.transaction(async (tx) => {
    await lockPartitions(tx);
    for (const day of days) {
      const name = partitionName(day);
      if (
        (await tx.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [name])).rows[0]?.found ===
        true
      )
        continue;
      const bounds = `FROM ('${day}') TO ('${nextDay(day)}')`;
      const stray = await tx.query('SELECT 1 FROM events_default WHERE ts >= $1 AND ts < $2 LIMIT 1', [
        day,
        nextDay(day),
      ]);
      if (stray.rowCount === 0) {
        await tx.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF events FOR VALUES ${bounds}`);
        continue;
      }
      // A new partition may not overlap rows of the default one: make it apart, move them, attach it.
      await tx.query(`CREATE TABLE ${name} (LIKE events INCLUDING DEFAULTS)`);
      await tx.query(
        `WITH moved AS (DELETE FROM events_default WHERE ts >= $1 AND ts < $2 RETURNING *) INSERT INTO ${name} SELECT * FROM moved`,
        [day, nextDay(day)],
      );
      await tx.query(`ALTER TABLE events ATTACH PARTITION ${name} FOR VALUES ${bounds}`);
    }
  });
}

/** The day partitions of `events`, oldest first (events_default is not one). */
export async function listDayPartitions(db: PgTx): Promise<{ name: string; day: string }[]> {
  const r = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'events'::regclass AND c.relname ~ '^events_[0-9]{8}$' ORDER BY c.relname`,
  );
  return r.rows.map(({ name }) => ({ name, day: `${name.slice(7, 11)}-${name.slice(11, 13)}-${name.slice(13, 15)}` }));
}

/**
 * Drops the partition of `day`, returning how many rows it held; undefined when the table stayed
 * busy past the lock timeout (the partition is left for the next pass).
 */
export async function dropDayPartition(db: PgDb, day: string): Promise<number | undefined> {
  const name = partitionName(day);
  try {
    return await db.transaction(async (tx) => {
      await lockPartitions(tx);
      if (
        (await tx.query<{ found: boolean }>('SELECT to_regclass($1) IS NOT NULL AS found', [name])).rows[0]?.found !==
        true
      )
        return 0;
      const rows = (await tx.query<{ n: number }>(`SELECT count(*) AS n FROM ${name}`)).rows[0]?.n ?? 0;
      await tx.query(`DROP TABLE ${name}`);
      return rows;
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === LOCK_NOT_AVAILABLE) return undefined;
    throw err;
  }
}

/** Takes the partition lock for the transaction and bounds its waits for table locks. */
async function lockPartitions(tx: PgTx): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [PARTITION_LOCK_CLASS]);
  await tx.query(`SET LOCAL lock_timeout = ${PARTITION_LOCK_TIMEOUT_MS}`);
}
