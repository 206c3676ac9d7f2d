/** `svc simulate`'s pure core: the keys it may use, the demo flows it sends to, the /run-/enqueue rotation and what each answer does to it. */
import { SvcError } from '../../common/errors.js';

/** The two routes a simulated request goes to. */
export type SimRoute = 'run' | 'enqueue';

/** One demo flow of a keyed tenant, with the sample input sent as its JSON body. */
export interface SimFlow {
  readonly tenant: string;
  readonly flow: string;
  /** The sample input, serialised once (every request of this flow sends these bytes). */
  readonly body: string;
}

/** A (flow, route) pair: one request's target. A 403 or 404 on either route withdraws the whole flow. */
export interface SimTarget extends SimFlow {
  readonly route: SimRoute;
}

/** The form every key must take, named in refusals. */
export const KEY_FORM = '--api-key <tenant>=<key>';

/**
 * Parses `tenant=key` (from `--api-key` or one item of `SVC_SIMULATE_API_KEYS`).
 * @throws SvcError SVC_ERR_INVALID_INPUT for a bare key or an empty side, naming the expected form
 */
export function parseKeyPair(text: string, source = '--api-key'): { tenant: string; key: string } {
  const at = text.indexOf('=');
  const tenant = at < 0 ? '' : text.slice(0, at).trim();
  const key = at < 0 ? '' : text.slice(at + 1).trim();
  if (at < 0)
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `${source}: a bare key is refused; give the tenant too, in the form ${KEY_FORM}`,
    );
  if (tenant === '' || key === '')
    throw new SvcError('SVC_ERR_INVALID_INPUT', `${source}: "${text}" lacks a tenant or a key; expected ${KEY_FORM}`);
  return { tenant, key };
}

/**
 * The keys by tenant: `SVC_SIMULATE_API_KEYS` (comma-separated `tenant=key`) first, then the
 * flags, so a flag overrides the environment for the same tenant.
 * @throws SvcError for any malformed item (nothing is half-used)
 */
export function collectKeys(flags: readonly string[], env: string | undefined): Map<string, string> {
  const keys = new Map<string, string>();
  const envItems = (env ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const item of envItems) {
    const { tenant, key } = parseKeyPair(item, 'SVC_SIMULATE_API_KEYS');
    keys.set(tenant, key);
  }
  for (const item of flags) {
    const { tenant, key } = parseKeyPair(item);
    keys.set(tenant, key);
  }
  return keys;
}

/** The flows simulate will use, and the tenants it skips for want of a key (sorted, each once). */
export function keyedFlows(
  flows: readonly SimFlow[],
  keys: ReadonlyMap<string, string>,
): { used: SimFlow[]; skippedTenants: string[] } {
  const used = flows.filter((f) => keys.has(f.tenant));
  const skippedTenants = [...new Set(flows.filter((f) => !keys.has(f.tenant)).map((f) => f.tenant))].sort();
  return { used, skippedTenants };
}

/** What an answer's status does to the run. */
export type AnswerVerdict = 'count' | 'withdraw' | 'stop';

/** 401: the key is wrong or revoked, nothing else will work: stop. 403/404: this flow cannot be reached: withdraw it (both routes). Anything else is traffic. */
export function verdictFor(status: number): AnswerVerdict {
  if (status === 401) return 'stop';
  if (status === 403 || status === 404) return 'withdraw';
  return 'count';
}

/** A label for a flow in the live view and summary: `tenant/flow`. */
export function flowLabel(f: { tenant: string; flow: string }): string {
  return `${f.tenant}/${f.flow}`;
}

/**
 * The rotation: request n goes to /enqueue when n % 3 === 2 (one in three), else to /run; within
 * a route the flows take turns. A route with nothing left lends its turn to the other route, so
 * traffic goes on while anything is left.
 */
export class Rotation {
  readonly #active: Record<SimRoute, SimTarget[]>;
  readonly #turn: Record<SimRoute, number> = { run: 0, enqueue: 0 };
  #n = 0;

  constructor(flows: readonly SimFlow[]) {
    this.#active = {
      run: flows.map((f) => ({ ...f, route: 'run' as const })),
      enqueue: flows.map((f) => ({ ...f, route: 'enqueue' as const })),
    };
  }

  /** The next target, or undefined when every flow has been withdrawn. */
  next(): SimTarget | undefined {
    const preferred: SimRoute = this.#n++ % 3 === 2 ? 'enqueue' : 'run';
    const route = this.#active[preferred].length > 0 ? preferred : preferred === 'run' ? 'enqueue' : 'run';
    const list = this.#active[route];
    if (list.length === 0) return undefined;
    const target = list[this.#turn[route]++ % list.length]!;
    return target;
  }

  /**
   * Takes the flow out of the rotation on both routes (spec: "403 and 404 withdraw the flow"; a
   * flow answering 404 on /run would otherwise go on getting /enqueue traffic that is accepted and
   * then dropped by the worker); true the first time, so the caller says so once.
   */
  withdraw(t: { tenant: string; flow: string }): boolean {
    let found = false;
    for (const route of ['run', 'enqueue'] as const) {
      const list = this.#active[route];
      const i = list.findIndex((x) => x.tenant === t.tenant && x.flow === t.flow);
      if (i >= 0) {
        list.splice(i, 1);
        found = true;
      }
    }
    return found;
  }

  /** True while some (flow, route) is left. */
  get hasTargets(): boolean {
    return this.#active.run.length + this.#active.enqueue.length > 0;
  }
}
