/** Shared helpers of the queue black-box tests: flow sources of tenant acme, signed /enqueue calls, log.db reads. */
import { openStore } from '../../src/storage/index.js';
import { sign } from './raw-http.js';
import { createKey, createTenant, flow, type KeyOptions } from './registry-setup.js';
import { storeRows } from './store-sql.js';
import type { Sandbox } from './svc.js';

/** A flow of tenant `acme`; `extra` front-matter lines go before the closing `---`. */
export function flowSource(name: string, extra: string[], body: string): string {
  return flow('acme', name, extra.join('\n'), body);
}

/** Echoes the input as `{"n": ...}`: the queue's happy path. */
export const OK_FLOW = flowSource(
  'ok',
  ['log_level: full'],
  '## Step: answer\n```ntd\n{"n": "{{ ctx.input.n }}"}\n```\n',
);

/** Creates tenant acme and a key of it; returns the raw key. */
export function tenantWithKey(sandbox: Sandbox, keyOpts: KeyOptions = {}): string {
  createTenant(sandbox, 'acme', { displayName: 'Acme' });
  return createKey(sandbox, 'acme', keyOpts);
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
export async function enqueue(
  base: string,
  flowName: string,
  body: string,
  o: EnqueueOptions,
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = {
    'content-type': o.contentType ?? 'application/json',
    authorization: `Bearer ${o.key}`,
  };
  if (o.correlationId) headers['x-correlation-id'] = o.correlationId;
  if (o.signature !== undefined) headers['x-svc-signature'] = o.signature;
  else if (o.secret) headers['x-svc-signature'] = sign(o.secret, body);
  const res = await fetch(`${base}/flows/acme/${flowName}/enqueue`, { method: 'POST', headers, body });
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
  return storeRows<EventRowLite>(
    sandbox,
    'log',
    `SELECT event, correlation_id, flow, step, outcome, payload, reason FROM events WHERE ${where} ORDER BY id`,
    ...args,
  );
}

/** One queue of a backlog written offline: `message(i)` is its i-th message. */
export interface BacklogQueue {
  readonly tenant: string;
  readonly flow: string;
  message(i: number): { correlationId: string; payload: unknown };
}

/**
 * Appends `perQueue` messages to each queue through the library while no server runs, on the
 * sandbox's store (a state directory or PostgreSQL): round by round, the queues of a round at once,
 * so each queue's messages are in the order of `i`.
 */
export async function writeBacklog(sandbox: Sandbox, queues: readonly BacklogQueue[], perQueue: number): Promise<void> {
  const store = await openStore(sandbox.store ?? sandbox.db, { pg: { maxConnections: 4 } });
  try {
    for (let i = 0; i < perQueue; i++)
      await Promise.all(queues.map((q) => store.queues.append(q.tenant, q.flow, q.message(i))));
  } finally {
    await store.close();
  }
}
