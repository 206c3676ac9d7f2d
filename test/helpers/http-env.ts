/** Black-box HTTP helpers: tenants, keys and fixture flows through the CLI; log/audit reads; raw sockets. */
import Database from 'better-sqlite3';
import { createHash, createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import type { EventRow } from '../../src/store/event-log-row.js';
import { SVC_BIN, svc, type Sandbox } from './svc.js';

/** test/fixtures/http in the source tree (this file runs from dist/test/helpers/). */
export const HTTP_FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/http');

function must(sandbox: Sandbox, args: string[]): string {
  const r = svc(sandbox, [...args, '--db', sandbox.db]);
  if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export function createTenant(sandbox: Sandbox, id: string): void {
  must(sandbox, ['tenant', 'create', '--id', id, '--display-name', id]);
}

export function setTenantEnabled(sandbox: Sandbox, id: string, enabled: boolean): void {
  must(sandbox, ['tenant', enabled ? 'enable' : 'disable', '--id', id]);
}

export interface KeyOptions {
  scopes?: string;
  flows?: string;
  rateLimit?: number;
  expiresAt?: string;
}

/** Creates a key and returns the raw `svk_...` value printed once. */
export function createKey(sandbox: Sandbox, tenant: string, opts: KeyOptions = {}): string {
  const args = ['keys', 'create', '--tenant', tenant, '--label', 'test'];
  if (opts.scopes !== undefined) args.push('--scopes', opts.scopes);
  if (opts.flows !== undefined) args.push('--flows', opts.flows);
  if (opts.rateLimit !== undefined) args.push('--rate-limit', String(opts.rateLimit));
  if (opts.expiresAt !== undefined) args.push('--expires-at', opts.expiresAt);
  const m = /svk_[0-9a-f]{32}/.exec(must(sandbox, args));
  if (!m) throw new Error('no key printed');
  return m[0];
}

export function revokeKey(sandbox: Sandbox, raw: string): void {
  // The key id is the row whose hash matches; the CLI revokes by id.
  const id = keyIdOf(sandbox, raw);
  must(sandbox, ['keys', 'revoke', '--id', String(id)]);
}

export function keyIdOf(sandbox: Sandbox, raw: string): number {
  const db = new Database(sandbox.db, { readonly: true });
  try {
    const row = db.prepare('SELECT id FROM api_keys WHERE key_hash = ?').get(createHash('sha256').update(raw).digest('hex')) as { id: number } | undefined;
    if (!row) throw new Error('key not found');
    return row.id;
  } finally {
    db.close();
  }
}

/** Deploys test/fixtures/http/<name>.flow.md under `version`. */
export function deployFixture(sandbox: Sandbox, name: string, version = '1'): void {
  must(sandbox, ['deploy', join(HTTP_FIXTURES, `${name}.flow.md`), '-v', version]);
}

/** Deploys fixtures (version 1), a few CLI processes at a time (each is a cold node start). */
export async function deployAll(sandbox: Sandbox, names: readonly string[], parallel = 4): Promise<void> {
  const queue = [...names];
  const worker = async () => {
    for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
      const args = [SVC_BIN, 'deploy', join(HTTP_FIXTURES, `${n}.flow.md`), '-v', '1', '--db', sandbox.db];
      const { code, out } = await new Promise<{ code: number | null; out: string }>((res) => {
        const child = spawn(process.execPath, args, { cwd: sandbox.home, env: sandbox.env, stdio: ['ignore', 'pipe', 'pipe'] });
        let text = '';
        child.stdout.on('data', (d: Buffer) => (text += d.toString()));
        child.stderr.on('data', (d: Buffer) => (text += d.toString()));
        child.on('exit', (c) => res({ code: c, out: text }));
      });
      if (code !== 0) throw new Error(`deploy ${n} exited ${code}\n${out}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, names.length) }, worker));
}

/** Writes rows of system_config in the registry database (the server reads some per request). */
export function setSystemConfig(sandbox: Sandbox, values: Record<string, string | number>): void {
  const db = new Database(sandbox.db);
  try {
    const stmt = db.prepare('INSERT INTO system_config (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    for (const [k, v] of Object.entries(values)) stmt.run(k, String(v));
  } finally {
    db.close();
  }
}

/** Runs `fn` with a writable handle on the registry database. */
export function withRegistry<T>(sandbox: Sandbox, fn: (db: Database.Database) => T): T {
  const db = new Database(sandbox.db);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** A log.db row as stored: the store's own row shape plus its id. */
export type LogRow = EventRow & { id: number };

/** Every log row matching `where` (column = value), oldest first; [] when log.db is not there yet. */
export function logRows(sandbox: Sandbox, where: Partial<Record<keyof LogRow, string | number>> = {}): LogRow[] {
  const path = join(dirname(sandbox.db), 'log.db');
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch {
    return [];
  }
  try {
    const keys = Object.keys(where);
    const sql = `SELECT * FROM events${keys.length ? ` WHERE ${keys.map((k) => `${k} = ?`).join(' AND ')}` : ''} ORDER BY id`;
    return db.prepare(sql).all(...keys.map((k) => where[k as keyof LogRow])) as LogRow[];
  } catch {
    return [];
  } finally {
    db.close();
  }
}

/** Polls the log (it is written in batches) until `count` rows match; bounded to ~3 s. */
export async function waitForLogRows(sandbox: Sandbox, where: Partial<Record<keyof LogRow, string | number>>, count = 1): Promise<LogRow[]> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const rows = logRows(sandbox, where);
    if (rows.length >= count || Date.now() > deadline) return rows;
    await sleep(25);
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
  const path = join(dirname(sandbox.db), 'audit.db');
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT tenant, seq, event_type, payload FROM audit_entries WHERE tenant = ? ORDER BY seq').all(tenant) as AuditRow[];
  } finally {
    db.close();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function sign(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export interface RawResponse {
  status: number;
  head: string;
  body: string;
  /** Everything received, interim answers included. */
  raw: string;
  /** True when the server closed the connection before the wait ended. */
  closed: boolean;
}

/**
 * Writes `request` (the head, and any body bytes given) on a raw TCP socket and collects the answer
 * until the server closes or `waitMs` passes. The body announced by Content-Length need not follow.
 */
export function rawRequest(
  port: number,
  request: string,
  opts: { waitMs?: number; untilClose?: boolean; afterContinue?: string } = {},
): Promise<RawResponse> {
  const { waitMs = 2000, untilClose = false, afterContinue } = opts;
  return new Promise((resolvePromise, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let closed = false;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      // Skip interim 1xx answers.
      const final = data.replace(/^(HTTP\/1\.1 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, '');
      const split = final.indexOf('\r\n\r\n');
      const head = split < 0 ? final : final.slice(0, split);
      const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (!m) {
        reject(new Error(`no HTTP answer: ${JSON.stringify(data)}`));
        return;
      }
      resolvePromise({ status: Number(m[1]), head, body: split < 0 ? '' : final.slice(split + 4), raw: data, closed });
    };
    const timer = setTimeout(finish, waitMs);
    let continued = false;
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      data += d;
      if (afterContinue !== undefined && !continued && /^HTTP\/1\.1 100 /.test(data) && data.includes('\r\n\r\n')) {
        continued = true;
        socket.write(afterContinue);
      }
      if (untilClose) return;
      // A complete final answer with a Content-Length: stop early.
      const final = data.replace(/^(HTTP\/1\.1 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, '');
      const split = final.indexOf('\r\n\r\n');
      if (split >= 0 && /^HTTP\/1\.1 [2-5]/.test(final)) {
        const len = /content-length: (\d+)/i.exec(final.slice(0, split));
        if (len && final.length - split - 4 >= Number(len[1])) finish();
      }
    });
    socket.on('end', () => {
      closed = true;
      finish();
    });
    socket.on('error', () => finish());
    socket.write(request);
  });
}
