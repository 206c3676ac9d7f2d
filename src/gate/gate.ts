/**
 * The one gate every door uses (HTTP, SOAP, gRPC). It runs before any body byte is read: an
 * unauthenticated caller costs two indexed queries (key by hash, tenant by id) and nothing else.
 */
import { sha256Hex } from '../common/digest.js';
import { flowNotFound, SvcError } from '../common/errors.js';
import { RateLimiter } from './rate-limiter.js';

/** What the gate needs to know about a key (a row found by the SHA-256 of the raw key). */
export interface GateKey {
  readonly id: number;
  readonly tenant: string;
  readonly scopes: readonly string[];
  readonly flows: readonly string[];
  /** Requests per second; undefined: never throttled. */
  readonly rateLimit?: number | undefined;
  readonly revoked: boolean;
  /** ISO 8601 UTC instant: the last second the key is valid (through its end); undefined never expires. */
  readonly expiresAt?: string | undefined;
}

/** What the gate reads of a flow: the latest artifact's `required_scope`, when it declares one. */
export interface GateFlow {
  readonly ir: { readonly requiredScope?: string | undefined };
}

/**
 * Lookups the gate makes; each may throw, and any throw becomes 503 (never a pass, never 401).
 * `F` is the flow as the service loads it: the pass hands it on, so a door reads it once per request.
 */
export interface GateLookups<F extends GateFlow = GateFlow> {
  findKeyByHash(sha256Hex: string): GateKey | undefined;
  tenantStatus(tenant: string): 'active' | 'disabled' | undefined;
  /** The latest artifact of the flow (its `required_scope` decides); undefined when no flow exists. */
  latestFlow(tenant: string, flow: string): F | undefined;
}

export interface GateRefusal {
  readonly status: number;
  /** Operator-facing reason for the `access_denied` log row; never shown to the caller. */
  readonly reason: string;
  readonly tenant: string;
  readonly flow: string;
  /** The key's tenant when a key was found: the chain the `access.denied` audit entry goes to. */
  readonly subjectTenant?: string;
  readonly keyId?: number;
  readonly correlationId?: string | undefined;
}

/** Side effects of refusals (log row, audit entry); injected so the gate stays free of I/O. */
export interface GateSinks {
  refused(refusal: GateRefusal): void;
}

/** Which route asks: metadata and connector events cost no token when they succeed. */
export type GateRoute = 'run' | 'enqueue' | 'metadata' | 'connector' | 'grpc';

export interface GateRequest {
  /**
   * The `Authorization` value; a list when the request carried more than one, which is refused
   * (401): a proxy reading the last one could disagree with us reading the first.
   */
  readonly authorization: string | readonly string[] | undefined;
  /** The caller's correlation id, if it sent one; read only when a refusal is recorded. */
  readonly correlationId?: () => string | undefined;
  readonly tenant: string;
  readonly flow: string;
  readonly route: GateRoute;
}

export interface GatePass<F extends GateFlow = GateFlow> {
  readonly key: GateKey;
  /**
   * The flow the gate read for its scope check, this turn: the door runs it without a second
   * lookup. Undefined when none could be read (no flow, or one the lookups would not hand over).
   */
  readonly flow: F | undefined;
}

const FREE_ON_SUCCESS: ReadonlySet<GateRoute> = new Set(['metadata', 'connector']);
/** The auth scheme is case-insensitive (RFC 9110, section 11.1): `bearer` and `BEARER` count as `Bearer`. */
const BEARER = /^Bearer ([^\s]+)$/i;

export function hashApiKey(raw: string): string {
  return sha256Hex(raw);
}

export class Gate<F extends GateFlow = GateFlow> {
  readonly #lookups: GateLookups<F>;
  readonly #sinks: GateSinks;
  readonly #limiter: RateLimiter;
  readonly #now: () => number;

  constructor(lookups: GateLookups<F>, sinks: GateSinks, opts: { limiter?: RateLimiter; now?: () => number } = {}) {
    this.#lookups = lookups;
    this.#sinks = sinks;
    this.#now = opts.now ?? Date.now;
    this.#limiter = opts.limiter ?? new RateLimiter(this.#now);
  }

  /** Decides a request; throws the refusal as an SvcError after recording its side effects. */
  check(req: GateRequest): GatePass<F> {
    const auth = req.authorization;
    if (typeof auth === 'object')
      throw this.#refuse(req, unauthorized(false), 401, `${auth.length} Authorization headers (one is required)`);
    const token = auth === undefined ? undefined : BEARER.exec(auth)?.[1];
    if (token === undefined) {
      throw this.#refuse(
        req,
        unauthorized(auth === undefined),
        401,
        auth === undefined ? 'missing Authorization header' : 'malformed Authorization header',
      );
    }
    let key: GateKey | undefined;
    try {
      key = this.#lookups.findKeyByHash(hashApiKey(token));
    } catch (cause) {
      throw this.#unavailable(req, cause);
    }
    if (key === undefined) throw this.#refuse(req, unauthorized(false), 401, 'unknown API key');
    if (key.revoked) throw this.#refuse(req, unauthorized(false), 401, `API key ${key.id} is revoked`, key);
    if (key.expiresAt !== undefined && !(Date.parse(key.expiresAt) + 1000 > this.#now())) {
      throw this.#refuse(req, unauthorized(false), 401, `API key ${key.id} expired at ${key.expiresAt}`, key);
    }
    // From here the key is valid: every refusal costs it a token.
    if (key.tenant !== req.tenant) {
      throw this.#refuse(
        req,
        unauthorized(false),
        401,
        `API key ${key.id} belongs to tenant '${key.tenant}', not '${req.tenant}'`,
        key,
        true,
      );
    }
    let status: 'active' | 'disabled' | undefined;
    let flow: F | undefined;
    try {
      status = this.#lookups.tenantStatus(req.tenant);
      // Asked only for an active tenant (a refused caller costs no more lookups than needed).
      if (status === 'active') flow = this.#lookups.latestFlow(req.tenant, req.flow);
    } catch (cause) {
      throw this.#unavailable(req, cause, key);
    }
    if (status !== 'active') {
      const why = status === undefined ? 'is not registered' : 'is disabled';
      throw this.#refuse(req, flowNotFound(req.tenant, req.flow), 404, `tenant '${req.tenant}' ${why}`, key, true);
    }
    const scope = flow?.ir.requiredScope;
    if (scope !== undefined && !key.scopes.includes('*') && !key.scopes.includes(scope)) {
      throw this.#refuse(
        req,
        forbidden('forbidden: insufficient scope'),
        403,
        `API key ${key.id} lacks scope '${scope}'`,
        key,
        true,
      );
    }
    if (key.flows.length > 0 && !key.flows.includes(req.flow)) {
      throw this.#refuse(
        req,
        forbidden('forbidden: flow not permitted for this key'),
        403,
        `flow '${req.flow}' is not in the allowlist of API key ${key.id}`,
        key,
        true,
      );
    }
    if (key.rateLimit !== undefined && !FREE_ON_SUCCESS.has(req.route)) {
      const decision = this.#limiter.take(key.id, key.rateLimit);
      if (!decision.allowed) {
        const err = new SvcError('SVC_ERR_RATE_LIMITED', 'rate limit exceeded', { headers: decision.headers });
        throw this.#refuse(req, err, 429, `API key ${key.id} exceeded ${key.rateLimit} requests per second`, key);
      }
    }
    return { key, flow };
  }

  /** A storage lookup failed: a 503 refusal, never a pass. (Inline try blocks: no closure per request.) */
  #unavailable(req: GateRequest, cause: unknown, key?: GateKey): SvcError {
    const err = new SvcError('SVC_ERR_STORAGE_UNAVAILABLE', 'authorization temporarily unavailable', { cause });
    return this.#refuse(
      req,
      err,
      503,
      `storage unavailable while deciding: ${cause instanceof Error ? cause.message : String(cause)}`,
      key,
    );
  }

  #refuse(req: GateRequest, err: SvcError, status: number, reason: string, key?: GateKey, charge = false): SvcError {
    if (charge && key?.rateLimit !== undefined) this.#limiter.charge(key.id, key.rateLimit);
    try {
      this.#sinks.refused({
        status,
        reason,
        tenant: req.tenant,
        flow: req.flow,
        subjectTenant: key?.tenant,
        keyId: key?.id,
        correlationId: req.correlationId?.(),
      });
    } catch {
      // Recording a refusal must never turn it into a pass or a different answer.
    }
    return err;
  }
}

function unauthorized(missingHeader: boolean): SvcError {
  return new SvcError(
    'SVC_ERR_UNAUTHORIZED',
    'unauthorized',
    missingHeader ? { headers: { 'www-authenticate': 'Bearer' } } : {},
  );
}

function forbidden(message: string): SvcError {
  return new SvcError('SVC_ERR_FORBIDDEN', message);
}
