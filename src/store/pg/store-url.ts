/**
 * The `--store` / `SVC_STORE_URL` value: a `postgres://` URL naming the shared database. Its
 * optional `schema` query parameter puts every table of the service in that schema (created when
 * missing), so several installations, or test runs, can share one database. The URL is never
 * logged as given: `redactStoreUrl` drops the password.
 */
import { SvcError } from '../../common/errors.js';

export interface StoreUrl {
  /** The URL as node-postgres takes it: the `schema` parameter removed. */
  readonly connectionString: string;
  /** Where the service's tables live. @default 'public' */
  readonly schema: string;
  /** The URL with its password replaced by `***`, for messages and logs. */
  readonly redacted: string;
}

/** A PostgreSQL identifier the service creates itself: lower case, digits and `_`, at most 63 bytes. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** @throws SvcError `SVC_ERR_INVALID_INPUT` naming what is wrong (never echoing a password). */
export function parseStoreUrl(value: string): StoreUrl {
  if (!isPostgresUrl(value))
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      'the store must be a postgres:// URL (postgres://user@host:port/database)',
    );
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      'the store URL cannot be parsed: expected postgres://user@host:port/database',
    );
  }
  if (url.hostname === '' || url.pathname.length <= 1)
    throw new SvcError('SVC_ERR_INVALID_INPUT', `the store URL ${redact(url)} needs a host and a database name`);
  const schema = url.searchParams.get('schema') ?? 'public';
  if (!SCHEMA_NAME.test(schema))
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `the store URL's schema "${schema}" is not a plain lower-case identifier (a-z, 0-9, _; at most 63)`,
    );
  // node-postgres would let it replace the server options PgDb sets (search_path to the schema,
  // synchronous_commit on), silently losing the schema and the durability /enqueue promises.
  if (url.searchParams.has('options'))
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `the store URL ${redact(url)} may not carry "options": the service sets the server options itself (search_path, synchronous_commit); name the schema with ?schema=`,
    );
  url.searchParams.delete('schema');
  return { connectionString: url.toString(), schema, redacted: redact(url, schema) };
}

function redact(url: URL, schema?: string): string {
  const copy = new URL(url.toString());
  if (copy.password !== '') copy.password = '***';
  if (schema !== undefined && schema !== 'public') copy.searchParams.set('schema', schema);
  return copy.toString();
}
