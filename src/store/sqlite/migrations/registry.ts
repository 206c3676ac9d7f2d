/** Schema of the registry database: tenants, API keys, flow artifacts and refs, settings, trace flags, flow state. */
import type { Migration } from '../db.js';

export const registryMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
      CREATE TABLE tenants (
        id TEXT PRIMARY KEY,
        display_name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
        auth_methods TEXT NOT NULL,          -- JSON array, ordered
        created_at TEXT NOT NULL
      );
      CREATE TABLE api_keys (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL REFERENCES tenants(id),
        label TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,       -- hex SHA-256 of the raw key; the key itself is never stored
        scopes TEXT NOT NULL,                -- JSON array
        flows TEXT NOT NULL,                 -- JSON array; empty means every flow of the tenant
        expires_at TEXT,                     -- ISO 8601 UTC instant
        rate_limit REAL,                     -- requests per second; NULL means unlimited
        revoked_at TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX api_keys_tenant ON api_keys(tenant);
      CREATE TABLE system_config (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE artifacts (
        hash TEXT PRIMARY KEY,               -- hex SHA-256 of bytes
        bytes BLOB NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE flow_versions (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        hash TEXT NOT NULL REFERENCES artifacts(hash),
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant, name, version)
      );
      CREATE TABLE flow_latest (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        PRIMARY KEY (tenant, name)
      );
      CREATE TABLE trace_config (
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant, flow)
      );
    `,
  },
  // Versions 2 and 3 are reserved for other branches; the runner applies any version not yet applied.
  {
    version: 4,
    name: 'proto_descriptors',
    sql: `
      CREATE TABLE proto_descriptors (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        hash TEXT NOT NULL,                  -- hex SHA-256 of bytes (a FileDescriptorSet)
        size_bytes INTEGER NOT NULL,
        bytes BLOB NOT NULL,
        deployed_at TEXT NOT NULL,
        PRIMARY KEY (tenant, name, version)
      );
      CREATE TABLE proto_latest (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        PRIMARY KEY (tenant, name),
        FOREIGN KEY (tenant, name, version) REFERENCES proto_descriptors(tenant, name, version)
      );
    `,
  },
  {
    version: 5,
    name: 'flow_state',
    sql: `
      -- Deduplication rows: one per (tenant, flow, key fingerprint); the business key is never stored.
      CREATE TABLE flow_inbox (
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        key_hash TEXT NOT NULL,              -- hex HMAC-SHA256 (or SHA-256) fingerprint of the key
        status TEXT NOT NULL CHECK (status IN ('in_flight', 'done', 'failed')),
        claimed_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,            -- ISO 8601 UTC; fixed at claim time from the window
        lease_expires_at TEXT,               -- in_flight only; NULL once released by the operator
        first_correlation_id TEXT NOT NULL,
        response_status INTEGER,
        response_headers TEXT,               -- JSON object replayed with the status
        response_body TEXT,                  -- JSON-encoded output; only with dedup_memoize_response
        finished_at TEXT,
        PRIMARY KEY (tenant, flow, key_hash)
      );
      CREATE INDEX flow_inbox_status ON flow_inbox(status, expires_at);
      CREATE INDEX flow_inbox_expires ON flow_inbox(expires_at);
      -- Correlation rows: a key may not be reused while any row exists for it.
      CREATE TABLE flow_correlations (
        tenant TEXT NOT NULL,
        flow TEXT NOT NULL,
        key_hash TEXT NOT NULL,
        step TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'timed_out', 'closed', 'closed_late')),
        opened_at TEXT NOT NULL,
        deadline TEXT NOT NULL,
        on_timeout_flow TEXT,
        correlation_id TEXT NOT NULL,
        state TEXT,                          -- JSON of correlation_state; never shown by any command
        closed_at TEXT,
        PRIMARY KEY (tenant, flow, key_hash)
      );
      CREATE INDEX flow_correlations_due ON flow_correlations(status, deadline);
    `,
  },
  {
    version: 6,
    name: 'flow_sources',
    sql: `
      -- The Markdown a version was compiled from, as deployed (shown on the UI's Registry page).
      -- Versions deployed before this migration have none.
      CREATE TABLE flow_sources (
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        source TEXT NOT NULL,
        PRIMARY KEY (tenant, name, version)
      );
    `,
  },
  {
    version: 7,
    name: 'certificates',
    sql: `
      -- The certificate registry: replaced, never edited; a retired entry is kept with status 'replaced'.
      -- The private key is never stored.
      CREATE TABLE certificates (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL REFERENCES tenants(id),
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('client_cert', 'server_cert', 'ca_cert')),
        subject TEXT NOT NULL,
        issuer TEXT NOT NULL,
        serial TEXT NOT NULL,
        valid_from TEXT NOT NULL,            -- ISO 8601 UTC
        valid_to TEXT NOT NULL,              -- ISO 8601 UTC
        sha256 TEXT NOT NULL,                -- fingerprint, colon-separated upper-case hex as openssl prints it
        pem TEXT NOT NULL,                   -- the certificate alone (public)
        status TEXT NOT NULL CHECK (status IN ('current', 'replaced')),
        created_at TEXT NOT NULL,
        replaced_at TEXT
      );
      CREATE UNIQUE INDEX certificates_current ON certificates(tenant, name) WHERE status = 'current';
      -- When each once-per-installation task last ran (the certificate sweep), claimed by compare-and-set.
      CREATE TABLE task_runs (
        task TEXT PRIMARY KEY,
        last_run_ms INTEGER NOT NULL
      );
    `,
  },
];
