/** Black-box set-up of the registry: tenants, keys and flows through the real `svc` commands, and the rows tests write by hand. */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withStore } from './store-sql.js';
import { ON_PG_STORE, SVC_BIN, storeArgs, svc, type Sandbox } from './svc.js';
import { sleep } from './wait.js';

/** test/fixtures/http in the source tree (this file runs from dist/test/helpers/). */
export const HTTP_FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/http');

/** Runs `svc <args> --db <sandbox db>` and returns its stdout; throws with both outputs when it fails. */
function must(sandbox: Sandbox, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = svc(sandbox, [...args, '--db', sandbox.db], { env });
  if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** `svc tenant create` (display name: the id unless given). */
export function createTenant(sandbox: Sandbox, id: string, opts: { displayName?: string } = {}): void {
  must(sandbox, ['tenant', 'create', '--id', id, '--display-name', opts.displayName ?? id]);
}

export function setTenantEnabled(sandbox: Sandbox, id: string, enabled: boolean): void {
  must(sandbox, ['tenant', enabled ? 'enable' : 'disable', '--id', id]);
}

export interface KeyOptions {
  /** `--scopes`, comma-separated. @default every scope */
  scopes?: string;
  /** `--flows`, the comma-separated allowlist. @default every flow */
  flows?: string;
  /** `--rate-limit`, requests per second. @default none */
  rateLimit?: number;
  /** `--expires-at`, ISO 8601. @default never */
  expiresAt?: string;
  /** @default 'test' */
  label?: string;
}

/** `svc keys create`; returns the raw `svk_...` value printed once. */
export function createKey(sandbox: Sandbox, tenant: string, opts: KeyOptions = {}): string {
  const args = ['keys', 'create', '--tenant', tenant, '--label', opts.label ?? 'test'];
  if (opts.scopes !== undefined) args.push('--scopes', opts.scopes);
  if (opts.flows !== undefined) args.push('--flows', opts.flows);
  if (opts.rateLimit !== undefined) args.push('--rate-limit', String(opts.rateLimit));
  if (opts.expiresAt !== undefined) args.push('--expires-at', opts.expiresAt);
  const out = must(sandbox, args);
  const m = /svk_[0-9a-f]{32}/.exec(out);
  if (!m) throw new Error(`no key printed:\n${out}`);
  return m[0];
}

/** `svc keys revoke` of the key whose raw value is `raw`. */
export function revokeKey(sandbox: Sandbox, raw: string): void {
  must(sandbox, ['keys', 'revoke', '--id', String(keyIdOf(sandbox, raw))]);
}

/** The id of a key in api_keys, found by the hash of its raw value. */
export function keyIdOf(sandbox: Sandbox, raw: string): number {
  return withRegistry(sandbox, (db) => {
    const row = db
      .prepare('SELECT id FROM api_keys WHERE key_hash = ?')
      .get(createHash('sha256').update(raw).digest('hex')) as { id: number } | undefined;
    if (!row) throw new Error('key not found');
    return row.id;
  });
}

/** A flow file from front-matter lines and a body. */
export function flow(tenant: string, name: string, frontMatter: string, body: string): string {
  const head = frontMatter.replace(/\n+$/, '');
  return `---\nflowdoc_version: "0.1"\nflow: ${name}\ntenant: ${tenant}\n${head ? `${head}\n` : ''}---\n\n${body}\n`;
}

export interface DeployOptions {
  /** @default '1' */
  version?: string;
  /** Extra environment of the `svc deploy` process. */
  env?: NodeJS.ProcessEnv;
}

/** Writes the flow text into the sandbox and `svc deploy`s it. */
export function deployFlow(sandbox: Sandbox, text: string, opts: DeployOptions = {}): void {
  const version = opts.version ?? '1';
  const name = /^flow:\s*(\S+)/m.exec(text)?.[1] ?? 'flow';
  const tenant = /^tenant:\s*(\S+)/m.exec(text)?.[1] ?? 'tenant';
  const file = join(sandbox.home, `${tenant}-${name}-${version}.flow.md`);
  writeFileSync(file, text);
  must(sandbox, ['deploy', file, '-v', version], opts.env);
}

/** Deploys many flow texts (version 1) with one `svc deploy <folder>` (one cold start, not one per flow). */
export function deployFlows(sandbox: Sandbox, texts: readonly string[]): void {
  const files: Record<string, string> = {};
  texts.forEach((text, i) => (files[`f${i}.flow.md`] = text));
  must(sandbox, ['deploy', flowFolder(sandbox, files), '-v', '1']);
}

/** A fresh folder under the sandbox holding the given files (name → text), for `svc deploy <dir>`. */
export function flowFolder(sandbox: Sandbox, files: Record<string, string>): string {
  const dir = mkdtempSync(join(sandbox.home, 'flows-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Deploys test/fixtures/http/<name>.flow.md under `version`. */
export function deployFixture(sandbox: Sandbox, name: string, version = '1'): void {
  must(sandbox, ['deploy', join(HTTP_FIXTURES, `${name}.flow.md`), '-v', version]);
}

/** Deploys fixtures (version 1) with one `svc deploy` process (all or nothing; each is a cold node start). */
export async function deployAll(sandbox: Sandbox, names: readonly string[]): Promise<void> {
  const args = [
    SVC_BIN,
    ...storeArgs(['deploy', ...names.map((n) => join(HTTP_FIXTURES, `${n}.flow.md`)), '-v', '1', '--db', sandbox.db]),
  ];
  const { code, out } = await new Promise<{ code: number | null; out: string }>((res) => {
    const child = spawn(process.execPath, args, {
      cwd: sandbox.home,
      env: sandbox.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    child.on('exit', (c) => res({ code: c, out: text }));
  });
  if (code !== 0) throw new Error(`deploy ${names.join(', ')} exited ${code}\n${out}`);
}

/** Runs `fn` with a writable handle on the sandbox's registry (hand-made rows, corruption), on either store. */
export const withRegistry = withStore;

/** Writes rows of system_config (the server reads some per request). */
export function setSystemConfig(sandbox: Sandbox, values: Record<string, string | number>): void {
  withRegistry(sandbox, (db) => {
    const stmt = db.prepare(
      'INSERT INTO system_config (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    );
    for (const [k, v] of Object.entries(values)) stmt.run(k, String(v));
  });
}

/** Turns payload tracing on for (tenant, flow): the row the sysadmin's toggle writes. */
export function enableTrace(sandbox: Sandbox, tenant: string, flowName: string): void {
  withRegistry(sandbox, (db) => {
    db.prepare(
      'INSERT INTO trace_config (tenant, flow, enabled, updated_at) VALUES (?, ?, true, ?) ON CONFLICT (tenant, flow) DO UPDATE SET enabled = true',
    ).run(tenant, flowName, new Date().toISOString());
  });
}

/** Inserts an artifact + flow_versions + flow_latest row for hand-made IR, with its correct hash. */
export function insertArtifact(sandbox: Sandbox, tenant: string, name: string, version: string, ir: unknown): string {
  const bytes = Buffer.from(JSON.stringify(ir), 'utf8');
  const hash = createHash('sha256').update(bytes).digest('hex');
  const at = new Date().toISOString();
  withRegistry(sandbox, (db) => {
    db.prepare('INSERT INTO artifacts (hash, bytes, created_at) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING').run(
      hash,
      bytes,
      at,
    );
    db.prepare('INSERT INTO flow_versions (tenant, name, version, hash, created_at) VALUES (?, ?, ?, ?, ?)').run(
      tenant,
      name,
      version,
      hash,
      at,
    );
    db.prepare(
      'INSERT INTO flow_latest (tenant, name, version) VALUES (?, ?, ?) ON CONFLICT (tenant, name) DO UPDATE SET version = excluded.version',
    ).run(tenant, name, version);
  });
  return hash;
}

/** Flips one byte of the latest artifact of tenant/name in place (its hash no longer matches). */
export function corruptArtifact(sandbox: Sandbox, tenant: string, name: string): void {
  withRegistry(sandbox, (db) => {
    const row = db
      .prepare<{ hash: string; bytes: Buffer }>(
        `SELECT a.hash, a.bytes FROM flow_latest l JOIN flow_versions v ON v.tenant = l.tenant AND v.name = l.name AND v.version = l.version
           JOIN artifacts a ON a.hash = v.hash WHERE l.tenant = ? AND l.name = ?`,
      )
      .get(tenant, name);
    if (!row) throw new Error(`no artifact for ${tenant}/${name}`);
    const bytes = Buffer.from(row.bytes);
    bytes[bytes.length - 2] ^= 0x20;
    db.prepare('UPDATE artifacts SET bytes = ? WHERE hash = ?').run(bytes, row.hash);
  });
}

/**
 * The answer of `probe` once a registry change the test just made is in force on the running
 * server. On the state directory the server reads a change at its next request: `probe` runs once.
 * On --store a node applies the store's change log a few milliseconds after the COMMIT (NOTIFY, or
 * its 200 ms poll; docs/scale-out.md), so a request sent the moment the command returned may come
 * first: `probe` is repeated until `holds(answer)`, for 5 s at most, and the last answer is
 * returned for the test to assert on.
 */
export async function inForce<T>(probe: () => Promise<T>, holds: (answer: T) => boolean): Promise<T> {
  let answer = await probe();
  const end = Date.now() + 5000;
  while (ON_PG_STORE && !holds(answer) && Date.now() < end) {
    await sleep(20);
    answer = await probe();
  }
  return answer;
}
