/**
 * A PostgreSQL tablespace on a small tmpfs, for full-disk tests of the store: the test's schema is
 * moved onto it, so its tables and indexes fill that tmpfs (a relation that cannot grow fails with
 * SQLSTATE 53100, "could not extend file ... No space left on device") while the server's WAL and
 * every other database stay on the server's own disk. The server must run on this machine (the
 * tablespace is a local directory) and the tests as root (to mount the tmpfs).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminQuery } from './pg.js';
import { mountTmpfs, unmountTmpfs } from './tmpfs.js';

export interface TmpfsTablespace {
  /** The tablespace's name (cluster-wide: unique per run). */
  readonly name: string;
  /** The tmpfs mount point; the tablespace is its `ts` subdirectory, so a ballast file goes beside it. */
  readonly mountDir: string;
  /** Moves every table, partition and index of `schema` onto the tablespace (new day partitions of a partitioned table follow). */
  moveSchema(schema: string): Promise<void>;
  /** Drops the tablespace (drop what lives on it first), unmounts the tmpfs and removes its directory. */
  drop(): Promise<void>;
}

/** Mounts a tmpfs of `sizeMiB` and makes a tablespace on it; a string says why that cannot be done here (the caller skips). */
export async function tmpfsTablespace(sizeMiB: number): Promise<TmpfsTablespace | string> {
  if (process.getuid?.() !== 0) return 'needs root to mount a small tmpfs';
  const dataDir = (await adminQuery<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory;
  if (!existsSync(dataDir))
    return `the test PostgreSQL is not on this machine (no ${dataDir} here): a tablespace must be a local directory`;
  // The server's own user owns its data directory; the tablespace directory must be that user's.
  const { uid, gid } = statSync(dataDir);
  const mountDir = mkdtempSync(join(tmpdir(), 'svc-pgdisk-'));
  chmodSync(mountDir, 0o755);
  if (!mountTmpfs(mountDir, sizeMiB)) {
    rmSync(mountDir, { recursive: true, force: true });
    return 'cannot mount a tmpfs here';
  }
  const location = join(mountDir, 'ts');
  mkdirSync(location, { mode: 0o700 });
  chownSync(location, uid, gid);
  // Names and paths below are made here ([a-z0-9_], mkdtemp's suffix): safe to put in the statements.
  const name = `svct_disk_${process.pid}_${randomBytes(4).toString('hex')}`;
  const unmount = async () => {
    await unmountTmpfs(mountDir);
    rmSync(mountDir, { recursive: true, force: true });
  };
  try {
    await adminQuery(`CREATE TABLESPACE ${name} LOCATION '${location}'`);
  } catch (err) {
    await unmount();
    return `cannot create a tablespace on the tmpfs: ${(err as Error).message}`;
  }
  return {
    name,
    mountDir,
    moveSchema: async (schema) => {
      await adminQuery(`DO $$ DECLARE r record; BEGIN
        FOR r IN SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = '${schema}' AND c.relkind IN ('r', 'p', 'm', 'i', 'I') LOOP
          EXECUTE format('ALTER %s %s SET TABLESPACE %I', CASE WHEN r.relkind IN ('i', 'I') THEN 'INDEX' ELSE 'TABLE' END, r.rel, '${name}');
        END LOOP;
      END $$`);
    },
    drop: async () => {
      try {
        await adminQuery(`DROP TABLESPACE IF EXISTS ${name}`);
      } finally {
        await unmount();
      }
    },
  };
}
