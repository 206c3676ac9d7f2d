/** Reads of what the server wrote beside the registry: log.db rows, the daily JSONL files, audit.db chains. */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { EventRow } from '../../src/store/event-log/event-log-row.js';
import { openStore } from '../../src/storage/index.js';
import { storeRows } from './store-sql.js';
import type { Sandbox } from './svc.js';
import { waitFor } from './wait.js';
import type { EventLogStore } from '../../src/store/contracts/index.js';

/** A log.db row as stored: the store's own row shape plus its id. */
export type LogRow = EventRow & { id: number };

/** Every log row matching `where` (column = value), oldest first; [] when log.db is not there yet. */
export function logRows(sandbox: Sandbox, where: Partial<Record<keyof LogRow, string | number>> = {}): LogRow[] {
  const keys = Object.keys(where);
  const sql = `SELECT * FROM events${keys.length ? ` WHERE ${keys.map((k) => `${k} = ?`).join(' AND ')}` : ''} ORDER BY id`;
  try {
    return storeRows<LogRow>(sandbox, 'log', sql, ...keys.map((k) => where[k as keyof LogRow]));
  } catch {
    return [];
  }
}

/** Waits until at least `count` log rows match (the log is written in batches) and returns them all. */
export function waitForLogRows(
  sandbox: Sandbox,
  where: Partial<Record<keyof LogRow, string | number>>,
  count = 1,
): Promise<LogRow[]> {
  return waitFor(`${count} log row(s) matching ${JSON.stringify(where)}`, () => {
    const rows = logRows(sandbox, where);
    return rows.length >= count && rows;
  });
}

/**
 * Runs `fn` with the event log's read side as the service reads it (`query`, `queryTrace`, the
 * role rules above them): log.db's repository, or in the PostgreSQL pass the store's. Closed after.
 */
export async function withEventLog<T>(sandbox: Sandbox, fn: (log: EventLogStore) => T | Promise<T>): Promise<T> {
  const store = await openStore(sandbox.store ?? sandbox.db, {
    pg: { maxConnections: 1, applicationName: 'svc-test-log' },
  });
  try {
    return await fn(store.eventLog);
  } finally {
    await store.close();
  }
}

/** Every line of logs/events-*.jsonl, parsed. */
export function jsonlEvents(sandbox: Sandbox): Record<string, unknown>[] {
  const dir = join(dirname(sandbox.db), 'logs');
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => /^events-\d{4}-\d{2}-\d{2}\.jsonl$/.test(f));
  } catch {
    return [];
  }
  return files.flatMap((f) =>
    readFileSync(join(dir, f), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
}

export interface AuditRow {
  tenant: string;
  seq: number;
  event_type: string;
  payload: string;
}

/** The audit entries of one tenant's chain, oldest first. */
export function auditRows(sandbox: Sandbox, tenant: string): AuditRow[] {
  return storeRows<AuditRow>(
    sandbox,
    'audit',
    'SELECT tenant, seq, event_type, payload FROM audit_entries WHERE tenant = ? ORDER BY seq',
    tenant,
  );
}

/** The largest "N lost since start" the event log reported on a server's stderr (0 when it reported none). */
export function reportedLostRows(stderr: string): number {
  return Math.max(
    0,
    ...[...stderr.matchAll(/\d+ event row\(s\) not written \((\d+) lost since start\)/g)].map((m) => Number(m[1])),
  );
}
