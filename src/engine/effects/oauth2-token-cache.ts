/**
 * OAuth2 client-credentials tokens for http_egress: fetched with a form POST to the token URL,
 * cached per (token URL, client, scope, audience) until expiry minus a safety margin, with one
 * request in flight per key however many steps ask at once.
 */
import { sha256Hex } from '../../common/digest.js';
import type { Dispatcher } from 'undici';
import { loadUndici } from './undici-module.js';

export interface OAuth2Request {
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scope?: string | undefined;
  readonly audience?: string | undefined;
}

export interface OAuth2TokenCacheOptions {
  /** Tokens are dropped this long before they expire, ms. @default 30000 */
  readonly marginMs?: number;
  /** Lifetime assumed when the server sends no expires_in, ms. @default 60000 */
  readonly defaultLifetimeMs?: number;
  /** Timeout of the token request, ms. @default 10000 */
  readonly timeoutMs?: number;
  readonly now?: () => number;
}

/** The token endpoint refused or answered something unusable. */
export class OAuth2TokenError extends Error {
  override readonly name = 'OAuth2TokenError';
}

interface Entry {
  readonly token: string;
  readonly expiresAt: number;
}

export class OAuth2TokenCache {
  readonly #tokens = new Map<string, Entry>();
  readonly #inFlight = new Map<string, Promise<string>>();
  readonly #marginMs: number;
  readonly #defaultLifetimeMs: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;

  constructor(opts: OAuth2TokenCacheOptions = {}) {
    this.#marginMs = opts.marginMs ?? 30_000;
    this.#defaultLifetimeMs = opts.defaultLifetimeMs ?? 60_000;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  // The secret is part of the identity but never kept in clear as a map key.
  static keyOf(req: OAuth2Request): string {
    return sha256Hex(
      JSON.stringify([req.tokenUrl, req.clientId, req.clientSecret, req.scope ?? '', req.audience ?? '']),
    );
  }

  /** A valid access token, from cache or freshly fetched. */
  async get(req: OAuth2Request, dispatcher?: Dispatcher): Promise<string> {
    const key = OAuth2TokenCache.keyOf(req);
    const hit = this.#tokens.get(key);
    if (hit !== undefined && hit.expiresAt > this.#now()) return hit.token;
    let pending = this.#inFlight.get(key);
    if (pending === undefined) {
      pending = this.#fetch(key, req, dispatcher).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  /** Forgets a token the backend refused (401), so the next call fetches a new one. */
  invalidate(req: OAuth2Request): void {
    this.#tokens.delete(OAuth2TokenCache.keyOf(req));
  }

  async #fetch(key: string, req: OAuth2Request, dispatcher?: Dispatcher): Promise<string> {
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: req.clientId,
      client_secret: req.clientSecret,
    });
    if (req.scope !== undefined && req.scope !== '') form.set('scope', req.scope);
    if (req.audience !== undefined && req.audience !== '') form.set('audience', req.audience);
    const started = this.#now();
    const { request } = await loadUndici();
    let res: Dispatcher.ResponseData;
    try {
      res = await request(req.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        ...(dispatcher === undefined ? {} : { dispatcher }),
      });
    } catch (err) {
      throw new OAuth2TokenError(`oauth2 token request to ${req.tokenUrl} failed: ${(err as Error).message}`);
    }
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode > 299) {
      throw new OAuth2TokenError(`oauth2 token endpoint ${req.tokenUrl} answered ${res.statusCode}`);
    }
    let parsed: { access_token?: unknown; expires_in?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new OAuth2TokenError(`oauth2 token endpoint ${req.tokenUrl} answered something other than JSON`);
    }
    if (typeof parsed.access_token !== 'string' || parsed.access_token === '') {
      throw new OAuth2TokenError(`oauth2 token endpoint ${req.tokenUrl} answered no access_token`);
    }
    const lifetimeMs =
      typeof parsed.expires_in === 'number' || typeof parsed.expires_in === 'string'
        ? Number(parsed.expires_in) * 1000
        : this.#defaultLifetimeMs;
    const expiresAt = started + (Number.isFinite(lifetimeMs) ? lifetimeMs : this.#defaultLifetimeMs) - this.#marginMs;
    if (expiresAt > this.#now()) this.#tokens.set(key, { token: parsed.access_token, expiresAt });
    return parsed.access_token;
  }
}
