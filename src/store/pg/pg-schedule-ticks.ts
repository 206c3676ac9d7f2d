/**
 * Each cron tick of a cluster claimed once (`schedule_ticks`, migration 0003): the scheduler lock
 * lets one node lead, and this claim makes a tick that two nodes fire around a hand-over (the old
 * leader paused past its lease, say) run once. A flow's claims older than ten minutes are deleted
 * by its next claim, so the table holds minutes of ticks, not history.
 */
import type { PgTx } from './pg-db.js';

const KEEP_MS = 10 * 60_000;

/** True when this caller claimed the tick (run it); false when another node did. */
export async function claimScheduleTick(
  db: PgTx,
  tenant: string,
  flow: string,
  tickAt: string,
  node: string,
): Promise<boolean> {
  const cutoff = new Date(Date.parse(tickAt) - KEEP_MS).toISOString();
  const r = await db.query(
    `WITH old AS (DELETE FROM schedule_ticks WHERE tenant = $1 AND flow = $2 AND tick_at < $5)
     INSERT INTO schedule_ticks (tenant, flow, tick_at, node) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
    [tenant, flow, tickAt, node, cutoff],
  );
  return (r.rowCount ?? 0) > 0;
}
