/**
 * The server the HTTP fuzzer attacks: the built `svc serve` as a child process with the signature
 * check on, three tenants (acme, beta, gone: disabled), one key per role the fuzzer plays, a logged-in
 * UI session, and flows that answer every input (plus one that fails on purpose, with a marker).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyName, WireContext } from './http-case.js';
import { flow, keyIdOf, setSystemConfig } from '../helpers/registry-setup.js';
import { makeSandbox, startServer, storeArgs, SVC_BIN, type Sandbox, type ServerProcess } from '../helpers/svc.js';

/** What the on-purpose failure answers (a `## Fault:` output), so the oracle can tell it from a defect. */
export const ON_PURPOSE_MARKER = 'failed_on_purpose';
/** The message of soapy's rule a request trips with `X-Mode: refuse` (a SOAP 1.1 fault is 500 by spec). */
export const SOAPY_RULE_MESSAGE = 'refused on request';

const PASS_THROUGH = '## Step: echo\nresponse_status: 200';

/**
 * The flows of tenant acme. Each is total: whatever the input (JSON of any type, XML, SOAP), it
 * answers, refuses with a validate rule, or (boom) fails on purpose, so a 5xx from any other is a defect.
 */
const FLOWS = [
  flow('acme', 'echo', 'log_level: payload_trimmed', PASS_THROUGH),
  flow(
    'acme',
    'fields',
    'log_level: full',
    `## Step: check
\`\`\`validate
!has(ctx.input.id) || ctx.input.id != "" | id must not be empty | syntactic
!has(ctx.input.amount) || !(type(ctx.input.amount) == int || type(ctx.input.amount) == double) || ctx.input.amount > 0 | amount must be positive | semantic
\`\`\`

## Step: answer
\`\`\`ntd
{"id": {{ has(ctx.input.id) ? ctx.input.id : null }}, "kind": "{{ type(ctx.input) }}", "whole": {{ ctx.input }}}
\`\`\``,
  ),
  flow('acme', 'headers', 'log_level: full', '## Step: show\n```ntd\n{{ ctx.headers }}\n```'),
  flow(
    'acme',
    'boom',
    '',
    `## Step: boom
\`\`\`ntd
{"x": {{ int('not a number') }}}
\`\`\`

## Fault: on-purpose
\`\`\`ntd
{"${ON_PURPOSE_MARKER}": true}
\`\`\``,
  ),
  flow('acme', 'small', 'max_message_bytes: 100', PASS_THROUGH),
  flow(
    'acme',
    'soapy',
    'soap_operation: Echo\nsoap_namespace: urn:fuzz:echo',
    `## Step: check
\`\`\`validate
!('x-mode' in ctx.headers) || ctx.headers['x-mode'] != 'refuse' | ${SOAPY_RULE_MESSAGE} | semantic
\`\`\`

${PASS_THROUGH}`,
  ),
  flow('acme', 'scoped', 'required_scope: admin', PASS_THROUGH),
];

export interface FuzzTarget {
  readonly server: ServerProcess;
  readonly sandbox: Sandbox;
  readonly wire: WireContext;
  /** GET /health: true when it answers 200 `{"ok":true}` within 10 s. */
  healthy(): Promise<boolean>;
  /** The server process's resident set size (VmRSS). Bytes. */
  rssBytes(): number;
  /** Stops the server (by its PID) and removes the sandbox. */
  close(): Promise<void>;
}

/** VmRSS of a process from /proc/<pid>/status. Bytes. */
export function readRssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** Logs in to the UI the way a browser does (login form, CSRF cookie and token); returns the session cookie's value. */
async function uiLogin(base: string, username: string, password: string): Promise<string> {
  const form = await fetch(`${base}/ui/login`);
  const csrfCookie = form.headers
    .getSetCookie()
    .map((c) => c.split(';', 1)[0]!)
    .join('; ');
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (token === undefined) throw new Error('no CSRF token on the login page');
  const res = await fetch(`${base}/ui/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrfCookie },
    body: new URLSearchParams({ _csrf: token, username, password }).toString(),
  });
  const session = res.headers
    .getSetCookie()
    .map((c) => /^svc_ui=([^;]+)/.exec(c)?.[1])
    .find((v) => v !== undefined);
  if (res.status !== 303 || session === undefined) throw new Error(`UI login answered ${res.status}`);
  return session;
}

/** `svc <args> --db <sandbox db>` (its store in the PostgreSQL pass) without blocking, so set-up commands (each a cold node start) overlap; resolves with stdout. */
function svcAsync(sandbox: Sandbox, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...storeArgs([...args, '--db', sandbox.db])], {
      cwd: sandbox.home,
      env: sandbox.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`svc ${args.join(' ')} exited ${code}\n${out}\n${err}`)),
    );
  });
}

/** `svc keys create` without blocking; the raw key. */
async function createKeyAsync(sandbox: Sandbox, tenant: string, extra: string[] = []): Promise<string> {
  const out = await svcAsync(sandbox, ['keys', 'create', '--tenant', tenant, '--label', 'fuzz', ...extra]);
  const key = /svk_[0-9a-f]{32}/.exec(out)?.[0];
  if (key === undefined) throw new Error(`no key printed:\n${out}`);
  return key;
}

/** `svc deploy` of a flow source without blocking. */
function deployAsync(sandbox: Sandbox, text: string, index: number): Promise<string> {
  const file = join(sandbox.home, `fuzz-${index}.flow.md`);
  writeFileSync(file, text);
  return svcAsync(sandbox, ['deploy', file, '-v', '1']);
}

/** Runs the tasks `parallel` at a time (two cores: more cold starts at once only queue up); results in task order. */
async function fewAtATime<T>(tasks: readonly (() => Promise<T>)[], parallel = 4): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < tasks.length; i = next++) results[i] = await tasks[i]!();
  };
  await Promise.all(Array.from({ length: Math.min(parallel, tasks.length) }, worker));
  return results;
}

export async function startFuzzTarget(): Promise<FuzzTarget> {
  const uiPassword = randomBytes(12).toString('hex');
  const sandbox = makeSandbox({ SVC_UI_ADMIN_USER: 'fuzz-admin', SVC_UI_ADMIN_PASS: uiPassword });
  let server: ServerProcess | undefined;
  try {
    await fewAtATime(
      ['acme', 'beta', 'gone'].map(
        (id) => () => svcAsync(sandbox, ['tenant', 'create', '--id', id, '--display-name', id]),
      ),
    );
    const flows = [...FLOWS, flow('gone', 'echo', '', PASS_THROUGH)];
    const [main, narrow, throttled, foreign, revoked, gone] = await fewAtATime([
      () => createKeyAsync(sandbox, 'acme'),
      () => createKeyAsync(sandbox, 'acme', ['--scopes', 'read', '--flows', 'echo']),
      () => createKeyAsync(sandbox, 'acme', ['--rate-limit', '20']),
      () => createKeyAsync(sandbox, 'beta'),
      () => createKeyAsync(sandbox, 'acme'),
      () => createKeyAsync(sandbox, 'gone'),
      ...flows.map((text, i) => () => deployAsync(sandbox, text, i)),
    ]);
    const keys: Record<KeyName, string> = {
      main: main!,
      narrow: narrow!,
      throttled: throttled!,
      foreign: foreign!,
      revoked: revoked!,
      gone: gone!,
    };
    await fewAtATime([
      () => svcAsync(sandbox, ['keys', 'revoke', '--id', String(keyIdOf(sandbox, keys.revoked))]),
      () => svcAsync(sandbox, ['tenant', 'disable', '--id', 'gone']),
    ]);
    // A stalled body ends in 408 after one second, so a fuzz case that stalls costs a second, not thirty.
    setSystemConfig(sandbox, { request_body_timeout_secs: 1 });
    const secret = randomBytes(16).toString('hex');
    server = await startServer(sandbox, ['--secret', secret]);
    const started = server;
    const session = await uiLogin(started.url, 'fuzz-admin', uiPassword);
    const pid = started.child.pid!;
    return {
      server: started,
      sandbox,
      wire: { keys, secret, session },
      healthy: async () => {
        try {
          const res = await fetch(`${started.url}/health`, { signal: AbortSignal.timeout(10_000) });
          return res.status === 200 && (await res.text()) === '{"ok":true}';
        } catch {
          return false;
        }
      },
      rssBytes: () => readRssBytes(pid),
      close: async () => {
        await started.stop();
        sandbox.cleanup();
      },
    };
  } catch (err) {
    await server?.stop();
    sandbox.cleanup();
    throw err;
  }
}
