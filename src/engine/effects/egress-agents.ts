/**
 * Keep-alive connection pools for http_egress: one undici Agent per (connect timeout, TLS
 * material); each Agent keeps its own pool per origin, so sockets are reused across calls.
 */
import { readFileSync } from 'node:fs';
import { Agent } from 'undici';

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
}

/** Raised when TLS material named by a step cannot be read. */
export class TlsMaterialError extends Error {
  override readonly name = 'TlsMaterialError';
}

export class AgentPool {
  readonly #agents = new Map<string, Agent>();
  readonly #keepAliveTimeoutMs: number;
  readonly #readFile: (path: string) => Buffer;

  constructor(opts: AgentPoolOptions = {}) {
    this.#keepAliveTimeoutMs = opts.keepAliveTimeoutMs ?? 4000;
    this.#readFile = opts.readFile ?? ((p) => readFileSync(p));
  }

  #read(path: string, what: string): Buffer {
    try {
      return this.#readFile(path);
    } catch (err) {
      throw new TlsMaterialError(`cannot read ${what} '${path}': ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }

  /** The Agent for these settings, created (and TLS files read) on first use. */
  agentFor(connectTimeoutMs: number, tls: TlsMaterialPaths): Agent {
    const key = JSON.stringify([connectTimeoutMs, tls.keyPath ?? '', tls.certPath ?? '', tls.caPath ?? '']);
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      const connect: Record<string, unknown> = { timeout: connectTimeoutMs };
      if (tls.keyPath !== undefined) connect.key = this.#read(tls.keyPath, 'tls_client_key');
      if (tls.certPath !== undefined) connect.cert = this.#read(tls.certPath, 'tls_client_cert');
      if (tls.caPath !== undefined) connect.ca = this.#read(tls.caPath, 'tls_ca_cert');
      agent = new Agent({ connect, keepAliveTimeout: this.#keepAliveTimeoutMs });
      this.#agents.set(key, agent);
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
    await Promise.allSettled(agents.map((a) => a.close()));
  }
}
