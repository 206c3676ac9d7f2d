/**
 * A state directory for one size of a scale part: tenant `bench` registered and an API key made
 * through the real CLI (as an operator would), flows published and settings written in-process
 * through the project's own stores (thousands of them in seconds, not one process each).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isoNow } from '../../src/common/clock.js';
import { statePaths, type StatePaths } from '../../src/common/paths.js';
import { compileFlow } from '../../src/flow/compile.js';
import { SqliteArtifactsStore } from '../../src/store/sqlite/sqlite-artifacts-store.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { registryMigrations } from '../../src/store/sqlite/migrations/registry.js';
import { SqliteSettingsStore } from '../../src/store/sqlite/sqlite-settings-store.js';
import type { ScaleContext } from './types.js';

export const TENANT = 'bench';

export interface PartSandbox {
  readonly home: string;
  /** HOME of the sandbox, operational log at warn. */
  readonly env: NodeJS.ProcessEnv;
  /** The registry database (`--db`). */
  readonly db: string;
  readonly paths: StatePaths;
  /** An API key of tenant `bench` (every scope). */
  readonly key: string;
  /** Runs the CLI under test in the sandbox; returns its stdout. */
  svc(args: string[]): string;
}

export function makeSandbox(ctx: ScaleContext, name: string): PartSandbox {
  const home = join(ctx.workDir, name);
  mkdirSync(home, { recursive: true });
  const env = { ...process.env, HOME: home, RUST_LOG: 'warn' };
  const db = join(home, 'state', 'registry.db');
  const svc = (args: string[]) =>
    execFileSync(process.execPath, [ctx.svcBin, ...args, '--db', db], {
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  svc(['tenant', 'create', '--id', TENANT, '--display-name', 'Bench']);
  const keyOut = svc(['keys', 'create', '--tenant', TENANT, '--label', 'bench']);
  const key = /svk_[0-9a-f]{32}/.exec(keyOut)?.[0];
  if (!key) throw new Error(`no key in: ${keyOut}`);
  return { home, env, db, paths: statePaths(db), key, svc };
}

/** Compiles and publishes each flow source at `version` (what `svc deploy` does), in one registry connection. */
export function publishFlows(db: string, sources: readonly string[], version = '1.0.0'): void {
  const conn = openDb(db, registryMigrations);
  try {
    const repo = new SqliteArtifactsStore(conn);
    for (const source of sources) {
      const r = compileFlow(source);
      if (!r.ir || !r.bytes || !r.hash)
        throw new Error(`bench flow does not compile: ${JSON.stringify(r.diagnostics)}`);
      repo.publish({
        tenant: r.ir.tenant,
        name: r.ir.flow,
        version,
        bytes: r.bytes,
        hash: r.hash,
        createdAt: isoNow(),
        source,
      });
    }
  } finally {
    conn.close();
  }
}

/** Writes platform settings (`system_config` rows), as the UI's settings page does. */
export function writeSettings(db: string, values: Readonly<Record<string, number>>): void {
  const conn = openDb(db, registryMigrations);
  try {
    const repo = new SqliteSettingsStore(conn);
    for (const [name, value] of Object.entries(values)) repo.set(name, value);
  } finally {
    conn.close();
  }
}

/** Disk blocks used by the files under `dir` (what `du` counts), recursively. Bytes. */
export function diskUsedBytes(dir: string): number {
  let total = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += diskUsedBytes(p);
    else if (e.isFile()) total += statSync(p).blocks * 512;
  }
  return total;
}

export const MiB = 1024 * 1024;
