/** Shared helpers of the queue black-box tests: flow sources, deploys, signed /enqueue calls, log.db reads. */
import Database from 'better-sqlite3';
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { statePaths } from '../../src/common/paths.js';
import { svc, type Sandbox } from './svc.js';

/** Front matter of a flow of tenant `acme`; `extra` lines go before the closing `---`. */
export function flowSource(name: string, extra: string[], body: string): string {
  return ['---', 'flowdoc_version: "0.1"', `flow: ${name}`, 'tenant: acme', ...extra, '---', '', body].join('\n');
}

/** Echoes the input as `{"n": ...}`: the queue's happy path. */
export const OK_FLOW = flowSource('ok', ['log_level: full'], '## Step: answer\n```ntd\n{"n": "{{ ctx.input.n }}"}\n```\n');

/** Deploys `source` under `version` and throws with the CLI's stderr on failure. */
export function deploy(sandbox: Sandbox, name: string, source: string, version = '1'): void {
  const path = join(sandbox.home, `${name}-${version}.flow.md`);
  writeFileSync(path, source);
  const r = svc(sandbox, ['deploy', path, '-v', version, '--db', sandbox.db]);
  if (r.code !== 0) throw new Error(`deploy ${name} failed: ${r.stderr}${r.stdout}`);
}

/** Creates tenant acme and a key (optionally with scopes); returns the raw key. */
export function tenantWithKey(sandbox: Sandbox, scopes?: string): string {
  const t = svc(sandbox, ['tenant', 'create', '--id', 'acme', '--display-name', 'Acme', '--db', sandbox.db]);
  if (t.code !== 0 && !/exists/.test(t.stderr)) throw new Error(t.stderr);
  return createKey(sandbox, scopes);
}

export function createKey(sandbox: Sandbox, scopes?: string): string {
  const r = svc(sandbox, ['keys', 'create', '--tenant', 'acme', '--label', 'q', ...(scopes ? ['--scopes', scopes] : []), '--db', sandbox.db]);
  const key = /svk_[0-9a-f]{32}/.exec(r.stdout)?.[0];
  if (!key) throw new Error(`no key: ${r.stderr}${r.stdout}`);
  return key;
}

export interface EnqueueOptions {
  key: string;
  secret?: string;
  correlationId?: string;
  contentType?: string;
  /** Send this signature instead of the right one. */
  signature?: string;
}

/** POST /flows/acme/<flow>/enqueue (signed when a secret is given). */
export async function enqueue(base: string, flow: string, body: string, o: EnqueueOptions): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { 'content-type': o.contentType ?? 'application/json', authorization: `Bearer ${o.key}` };
  if (o.correlationId) headers['x-correlation-id'] = o.correlationId;
  if (o.signature !== undefined) headers['x-svc-signature'] = o.signature;
  else if (o.secret) headers['x-svc-signature'] = createHmac('sha256', o.secret).update(body).digest('hex');
  const res = await fetch(`${base}/flows/acme/${flow}/enqueue`, { method: 'POST', headers, body });
  return { status: res.status, text: await res.text() };
}

export interface EventRowLite {
  event: string;
  correlation_id: string | null;
  flow: string | null;
  step: string | null;
  outcome: string | null;
  payload: string | null;
  reason: string | null;
}

/** Rows of log.db matching `where` (read-only; the server writes in the background). */
export function events(sandbox: Sandbox, where = '1=1', args: unknown[] = []): EventRowLite[] {
  const db = new Database(statePaths(sandbox.db).logDb, { readonly: true, fileMustExist: true, timeout: 5000 });
  try {
    return db.prepare(`SELECT event, correlation_id, flow, step, outcome, payload, reason FROM events WHERE ${where} ORDER BY id`).all(...args) as EventRowLite[];
  } finally {
    db.close();
  }
}

/** Polls `probe` every 50 ms until it returns a truthy value; throws after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    let v: T | undefined | false;
    try {
      v = probe();
    } catch {
      v = undefined; // log.db not created yet, or busy
    }
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
