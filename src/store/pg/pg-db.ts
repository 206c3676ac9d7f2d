/**
 * The service's connection pool to its PostgreSQL store. Every connection sets the schema of the
 * store URL as its search path and keeps `synchronous_commit` on, so a COMMIT that returned is on
 * the server's disk (an acknowledged /enqueue, deploy or audit entry survives a crash of the
 * database server, as it survives one of this machine with SQLite's synchronous=FULL).
 *
 * A lost or refused connection surfaces as StorageUnavailableError, whatever the statement: the
 * doors answer it with 503 and nothing is acknowledged; the pool reconnects on the next query, so
 * the service recovers without a restart once the server is back.
 */
import pg from 'pg';
import { StorageUnavailableError } from '../../common/errors.js';
import type { StoreUrl } from './store-url.js';

/**
 * bigint (int8) columns come back as numbers: ids, sequence numbers and millisecond instants stay
 * far below 2^53, and every repository contract speaks numbers. Other types keep pg's parsers.
 */
const INT8_OID = 20;
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export interface PgDbOptions {
  /** Connections at most. @default 10 */
  readonly maxConnections?: number;
  /** Shown in pg_stat_activity. @default 'svc' */
  readonly applicationName?: string;
  /** How long a query waits for a free connection or a new one, in ms. @default 5000 */
  readonly connectTimeoutMs?: number;
  /**
   * The server ends a pool connection whose transaction sat idle this long (`idle_in_transaction_session_timeout`),
   * and its row locks with it: a process paused or cut off between two statements of a transaction
   * (an append holding a queue's id counter, an audit batch holding a tenant's chain head) holds up
   * the other nodes for that long at most. Milliseconds. @default none (the server's setting)
   */
  readonly idleInTransactionTimeoutMs?: number;
  /** Told of an idle connection the server dropped (the pool replaces it by itself). */
  readonly onIdleError?: (err: Error) => void;
}

/** One transaction's connection: queries run inside it, in order. */
export interface PgTx {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/** One server session held for a long time (see PgDb.openSession). */
export interface PgSession extends PgTx {
  /** LISTEN notifications: channel and payload. */
  onNotification(fn: (channel: string, payload: string) => void): void;
  /** Called once when the connection is lost or closed (at once when it already is). */
  onLost(fn: (err: Error) => void): void;
  readonly lost: boolean;
  end(): Promise<void>;
}

export class PgDb implements PgTx {
  readonly url: StoreUrl;
  readonly #pool: pg.Pool;
  #closed = false;

  constructor(url: StoreUrl, opts: PgDbOptions = {}) {
    this.url = url;
    this.#pool = new pg.Pool({
      connectionString: url.connectionString,
      max: opts.maxConnections ?? 10,
      application_name: opts.applicationName ?? 'svc',
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      // The identifier was checked by parseStoreUrl (lower case, digits, _), so it needs no quoting.
      options: `-c search_path=${url.schema} -c synchronous_commit=on${opts.idleInTransactionTimeoutMs === undefined ? '' : ` -c idle_in_transaction_session_timeout=${Math.trunc(opts.idleInTransactionTimeoutMs)}`}`,
      types: TYPES,
    });
    // Without a listener an idle connection's error (the server restarted) would end the process.
    this.#pool.on('error', (err) => opts.onIdleError?.(err));
  }

  get schema(): string {
    return this.url.schema;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.#pool.query<R>(sql, params as unknown[] | undefined);
    } catch (err) {
      throw asUnavailable(err, this.url);
    }
  }

  /**
   * Runs `fn` in one transaction (READ COMMITTED) on one connection: COMMIT when it resolves,
   * ROLLBACK when it throws. A connection that failed mid-way is discarded, not returned to the pool.
   */
  async transaction<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    return this.withConnection(async (client) => {
      await client.query('BEGIN');
      try {
        const out = await fn(client);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  /** Runs `fn`'s reads on one snapshot (REPEATABLE READ, READ ONLY): every statement sees the same commits. */
  async readSnapshot<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    return this.withConnection(async (client) => {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        return await fn(client);
      } finally {
        await client.query('ROLLBACK').catch(() => undefined);
      }
    });
  }

  /** Lends one connection to `fn` (a session-level advisory lock, LISTEN); it is released after. */
  async withConnection<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw asUnavailable(err, this.url);
    }
    let broken: Error | undefined;
    // The server may end a lent connection between two statements (the idle-in-transaction timeout,
    // an administrator, a restart): node-postgres then emits 'error', which would end the process
    // with no listener (the pool listens only while the connection is idle).
    const onError = (err: Error) => (broken ??= err);
    client.on('error', onError);
    try {
      return await fn(client);
    } catch (err) {
      if (isConnectionLoss(err)) broken ??= err as Error;
      throw asUnavailable(broken !== undefined && !isConnectionLoss(err) ? broken : err, this.url);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  /** A connection of its own, outside the pool's count (see openSession). */
  async #dedicatedClient(settings: Record<string, string> = {}, applicationName = 'svc-session'): Promise<pg.Client> {
    const extra = Object.entries(settings)
      .map(([k, v]) => ` -c ${k}=${v}`)
      .join('');
    const client = new pg.Client({
      connectionString: this.url.connectionString,
      application_name: applicationName,
      options: `-c search_path=${this.url.schema}${extra}`,
      types: TYPES,
    });
    try {
      await client.connect();
    } catch (err) {
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      throw asUnavailable(err, this.url);
    }
    return client;
  }

  /**
   * A session of its own (session-level advisory locks, LISTEN), wrapped so that layers above the
   * store need not know node-postgres. `settings` are server parameters of the session (e.g.
   * `idle_session_timeout`).
   */
  async openSession(settings: Record<string, string> = {}, applicationName = 'svc-session'): Promise<PgSession> {
    const client = await this.#dedicatedClient(settings, applicationName);
    const url = this.url;
    let lost: Error | undefined;
    const lostListeners: ((err: Error) => void)[] = [];
    const onLost = (err: Error) => {
      if (lost !== undefined) return;
      lost = err;
      for (const l of lostListeners) l(err);
    };
    client.on('error', onLost);
    client.on('end', () => onLost(new Error('the session ended')));
    return {
      query: async <R extends pg.QueryResultRow>(sql: string, params?: readonly unknown[]) => {
        if (lost !== undefined)
          throw asUnavailable(
            Object.assign(new Error(`Connection terminated: ${lost.message}`), { code: '08006' }),
            url,
          );
        try {
          return await client.query<R>(sql, params as unknown[] | undefined);
        } catch (err) {
          throw asUnavailable(err, url);
        }
      },
      onNotification: (fn) => void client.on('notification', (n) => fn(n.channel, n.payload ?? '')),
      onLost: (fn) => {
        if (lost !== undefined) fn(lost);
        else lostListeners.push(fn);
      },
      get lost() {
        return lost !== undefined;
      },
      end: async () => {
        onLost(new Error('the session was closed'));
        await client.end().catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }
}

/** SQLSTATE classes and socket errors that mean the server cannot be reached now, not that the statement is wrong. */
export function isConnectionLoss(err: unknown): boolean {
  if (err instanceof StorageUnavailableError) return true;
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  // 25P03, 57P05: the server ended an idle session (idle_in_transaction_session_timeout, idle_session_timeout).
  if (code.startsWith('08') || ['57P01', '57P02', '57P03', '57P05', '25P03', '53300'].includes(code)) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND'].includes(code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended unexpectedly|Client was closed and is not queryable/i.test(
    message,
  );
}

function asUnavailable(err: unknown, url: StoreUrl): unknown {
  if (err instanceof StorageUnavailableError || !isConnectionLoss(err)) return err;
  const reason = (err as { message?: string }).message ?? String(err);
  return new StorageUnavailableError(
    `the PostgreSQL store ${url.redacted} is unavailable: ${reason.replaceAll(url.connectionString, url.redacted)}`,
    err,
  );
}
