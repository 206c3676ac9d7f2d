/**
 * Whether any connection committed to a SQLite file since the last look, read from the header's
 * file change counter (4 bytes, big-endian, at offset 24), which every commit in rollback-journal
 * mode increments before it releases its lock. One pread from the page cache, where
 * `PRAGMA data_version` costs about nine syscalls (shared lock, hot-journal and WAL checks, the
 * same header read, unlock) and misses the asking connection's own commits: on a machine where
 * syscalls are dear, that was a visible share of the request path, since the registry cache asks
 * once per event-loop turn and the gRPC door's method catalog on every call.
 *
 * A read racing a commit sees either the old value (the commit has not finished, so nothing is
 * missed) or a new one, possibly torn, which differs and only invalidates once too often.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import type { Db } from './db.js';

const COUNTER_OFFSET = 24;

export interface ChangeCounter {
  /** A value that differs from the previous read whenever a commit happened in between. */
  read(): unknown;
  close(): void;
}

/**
 * The file's header counter. A database without a file (tests in memory) has no other connection,
 * so the rows its own connection changed stand in for it.
 */
export function changeCounterOf(db: Db): ChangeCounter {
  if (db.memory) {
    const changes = db.prepare('SELECT total_changes()').pluck();
    return { read: () => changes.get(), close: () => undefined };
  }
  const fd = openSync(db.name, 'r');
  const buf = Buffer.alloc(4);
  let closed = false;
  return {
    read: () => {
      if (readSync(fd, buf, 0, 4, COUNTER_OFFSET) < 4) return -1;
      return buf.readUInt32BE(0);
    },
    close: () => {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}
