/**
 * Keep-alive connection pools for http_egress: one undici Agent per (connect timeout, TLS
 * material); each Agent keeps its own pool per origin, so sockets are reused across calls.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Agent } from 'undici';
import { loadUndici } from './undici-module.js';

export interface TlsMaterialPaths {
  /** Paths on this node (step keys tls_client_key / tls_client_cert / tls_ca_cert). */
  readonly keyPath?: string | undefined;
  readonly certPath?: string | undefined;
  readonly caPath?: string | undefined;
}

export interface AgentPoolOptions {
  /** Idle keep-alive of a pooled socket, ms. @default 4000 */
  readonly keepAliveTimeoutMs?: number;
  /** Reads TLS material; injectable for tests. @default fs.readFileSync */
  readonly readFile?: (path: string) => Buffer;
  /** Modification time of a TLS file, ms; a change builds a fresh pool. @default fs.statSync().mtimeMs */
  readonly mtimeMs?: (path: string) => number;
}

/** Raised when TLS material named by a step cannot be read. */
export class TlsMaterialError extends Error {
  override readonly name = 'TlsMaterialError';
}

export class AgentPool {
  readonly #agents = new Map<string, Agent>();
  readonly #keepAliveTimeoutMs: number;
  readonly #readFile: (path: string) => Buffer;
  readonly #mtimeMs: (path: string) => number;
  /** Pool key without file versions -> the versioned key in use, so a rotated file retires the old pool. */
  readonly #current = new Map<string, string>();

  constructor(opts: AgentPoolOptions = {}) {
    this.#keepAliveTimeoutMs = opts.keepAliveTimeoutMs ?? 4000;
    this.#readFile = opts.readFile ?? ((p) => readFileSync(p));
    this.#mtimeMs = opts.mtimeMs ?? ((p) => statSync(p).mtimeMs);
  }

  #version(path: string | undefined, what: string): number {
    if (path === undefined) return 0;
    try {
      return this.#mtimeMs(path);
    } catch (err) {
      throw new TlsMaterialError(
        `cannot read ${what} '${path}': ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }

  #read(path: string, what: string): Buffer {
    try {
      return this.#readFile(path);
    } catch (err) {
      throw new TlsMaterialError(
        `cannot read ${what} '${path}': ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }

  /**
   * The Agent for these settings, created (and TLS files read) on first use. TLS files are
   * stat'ed on every call: a rotated certificate gets a fresh pool and the old one is closed
   * gracefully (in-flight requests finish). Async only because undici is loaded on first use.
   */
  async agentFor(connectTimeoutMs: number, tls: TlsMaterialPaths): Promise<Agent> {
    const { Agent } = await loadUndici();
    const base = JSON.stringify([connectTimeoutMs, tls.keyPath ?? '', tls.certPath ?? '', tls.caPath ?? '']);
    const key = `${base}@${this.#version(tls.keyPath, 'tls_client_key')}/${this.#version(tls.certPath, 'tls_client_cert')}/${this.#version(tls.caPath, 'tls_ca_cert')}`;
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      const previous = this.#current.get(base);
      if (previous !== undefined) {
        const old = this.#agents.get(previous);
        this.#agents.delete(previous);
        void old?.close().catch(() => undefined);
      }
      const connect: Record<string, unknown> = { timeout: connectTimeoutMs };
      if (tls.keyPath !== undefined) connect.key = this.#read(tls.keyPath, 'tls_client_key');
      if (tls.certPath !== undefined) connect.cert = this.#read(tls.certPath, 'tls_client_cert');
      if (tls.caPath !== undefined) connect.ca = this.#read(tls.caPath, 'tls_ca_cert');
      // HTTP/1.1 as the spec describes calls out (undici 8 offers HTTP/2 by ALPN by default): the
      // headers a flow sets pass as they are, and the pool's keep-alive rules stay the documented ones.
      agent = new Agent({ connect, keepAliveTimeout: this.#keepAliveTimeoutMs, allowH2: false });
      this.#agents.set(key, agent);
      this.#current.set(base, key);
    }
    return agent;
  }

  get size(): number {
    return this.#agents.size;
  }

  /** Closes every pool; runs every close even when one fails. */
  async close(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    this.#current.clear();
    await Promise.allSettled(agents.map((a) => a.close()));
  }
}
