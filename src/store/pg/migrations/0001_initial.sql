-- The shared store of a cluster: what the SQLite state directory holds in registry.db, audit.db
-- and ui.db, with the same columns. Instants stay ISO 8601 UTC text and JSON stays text, as in
-- SQLite, so every value round-trips byte for byte (audit hashes cover them) and compares the same.

-- Registry ------------------------------------------------------------------------------------
CREATE TABLE tenants (
  id text PRIMARY KEY,
  display_name text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'disabled')),
  auth_methods text NOT NULL,            -- JSON array, ordered
  created_at text NOT NULL
);
CREATE TABLE api_keys (
  id bigserial PRIMARY KEY,
  tenant text NOT NULL REFERENCES tenants(id),
  label text NOT NULL,
  key_hash text NOT NULL UNIQUE,         -- hex SHA-256 of the raw key; the key itself is never stored
  scopes text NOT NULL,                  -- JSON array
  flows text NOT NULL,                   -- JSON array; empty means every flow of the tenant
  expires_at text,
  rate_limit double precision,           -- requests per second; NULL means unlimited
  revoked_at text,
  created_at text NOT NULL
);
CREATE INDEX api_keys_tenant ON api_keys(tenant);
CREATE TABLE system_config (
  key text PRIMARY KEY,
  value text NOT NULL
);
CREATE TABLE artifacts (
  hash text PRIMARY KEY,                 -- hex SHA-256 of bytes
  bytes bytea NOT NULL,
  created_at text NOT NULL
);
CREATE TABLE flow_versions (
  tenant text NOT NULL,
  name text NOT NULL,
  version text NOT NULL,
  hash text NOT NULL REFERENCES artifacts(hash),
  created_at text NOT NULL,
  seq bigserial NOT NULL,                -- deploy order among versions deployed in the same instant
  PRIMARY KEY (tenant, name, version)
);
CREATE TABLE flow_latest (
  tenant text NOT NULL,
  name text NOT NULL,
  version text NOT NULL,
  PRIMARY KEY (tenant, name)
);
CREATE TABLE flow_sources (
  tenant text NOT NULL,
  name text NOT NULL,
  version text NOT NULL,
  source text NOT NULL,
  PRIMARY KEY (tenant, name, version)
);
CREATE TABLE trace_config (
  tenant text NOT NULL,
  flow text NOT NULL,
  enabled boolean NOT NULL DEFAULT false,
  updated_at text NOT NULL,
  PRIMARY KEY (tenant, flow)
);
CREATE TABLE proto_descriptors (
  tenant text NOT NULL,
  name text NOT NULL,
  version text NOT NULL,
  hash text NOT NULL,
  size_bytes integer NOT NULL,
  bytes bytea NOT NULL,
  deployed_at text NOT NULL,
  PRIMARY KEY (tenant, name, version)
);
CREATE TABLE proto_latest (
  tenant text NOT NULL,
  name text NOT NULL,
  version text NOT NULL,
  PRIMARY KEY (tenant, name),
  FOREIGN KEY (tenant, name, version) REFERENCES proto_descriptors(tenant, name, version)
);
CREATE TABLE certificates (
  id bigserial PRIMARY KEY,
  tenant text NOT NULL REFERENCES tenants(id),
  name text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('client_cert', 'server_cert', 'ca_cert')),
  subject text NOT NULL,
  issuer text NOT NULL,
  serial text NOT NULL,
  valid_from text NOT NULL,
  valid_to text NOT NULL,
  sha256 text NOT NULL,
  pem text NOT NULL,                     -- the certificate alone (public); the private key is never stored
  status text NOT NULL CHECK (status IN ('current', 'replaced')),
  created_at text NOT NULL,
  replaced_at text
);
CREATE UNIQUE INDEX certificates_current ON certificates(tenant, name) WHERE status = 'current';
-- When each once-per-cluster task last ran, claimed by compare-and-set.
CREATE TABLE task_runs (
  task text PRIMARY KEY,
  last_run_ms bigint NOT NULL
);

-- The change signal of the registry's request-path reads ---------------------------------------
-- Every change to a row the gate or the flow loader reads from memory appends one row here and
-- notifies channel svc_registry with the schema's name. Appends are serialised by a transaction
-- advisory lock taken before the sequence is drawn, so seq order is commit order: a node that has
-- read every change up to seq N has missed none below it.
CREATE TABLE registry_changes (
  seq bigserial PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('key', 'tenant', 'latest', 'trace', 'setting', 'descriptor')),
  k1 text NOT NULL,
  k2 text NOT NULL DEFAULT '',
  at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION registry_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record := COALESCE(NEW, OLD);
  kind text := TG_ARGV[0];
  k1 text;
  k2 text := '';
BEGIN
  PERFORM pg_advisory_xact_lock(1398162243, hashtext(current_schema())); -- 'SVCC'
  IF kind = 'key' THEN k1 := r.key_hash;
  ELSIF kind = 'tenant' THEN k1 := r.id;
  ELSIF kind = 'latest' THEN k1 := r.tenant; k2 := r.name;
  ELSIF kind = 'trace' THEN k1 := r.tenant; k2 := r.flow;
  ELSIF kind = 'descriptor' THEN k1 := r.tenant; k2 := r.name;
  ELSE k1 := r.key;
  END IF;
  INSERT INTO registry_changes (kind, k1, k2) VALUES (kind, k1, k2);
  PERFORM pg_notify('svc_registry', current_schema());
  RETURN NULL;
END $$;

CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION registry_changed('key');
CREATE TRIGGER tenants_changed AFTER INSERT OR UPDATE OR DELETE ON tenants FOR EACH ROW EXECUTE FUNCTION registry_changed('tenant');
CREATE TRIGGER flow_latest_changed AFTER INSERT OR UPDATE OR DELETE ON flow_latest FOR EACH ROW EXECUTE FUNCTION registry_changed('latest');
CREATE TRIGGER trace_config_changed AFTER INSERT OR UPDATE OR DELETE ON trace_config FOR EACH ROW EXECUTE FUNCTION registry_changed('trace');
CREATE TRIGGER system_config_changed AFTER INSERT OR UPDATE OR DELETE ON system_config FOR EACH ROW EXECUTE FUNCTION registry_changed('setting');
CREATE TRIGGER proto_latest_changed AFTER INSERT OR UPDATE OR DELETE ON proto_latest FOR EACH ROW EXECUTE FUNCTION registry_changed('descriptor');

-- Flow state: deduplication and correlation ------------------------------------------------------
-- The instants are compared (a window or lease in force, a deadline passed) and ordered as text,
-- so they collate byte by byte, as in SQLite, whatever the database's default collation.
CREATE TABLE flow_inbox (
  tenant text NOT NULL,
  flow text NOT NULL,
  key_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('in_flight', 'done', 'failed')),
  claimed_at text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  lease_expires_at text COLLATE "C",
  first_correlation_id text NOT NULL,
  response_status integer,
  response_headers text,
  response_body text,
  finished_at text,
  PRIMARY KEY (tenant, flow, key_hash)
);
CREATE INDEX flow_inbox_status ON flow_inbox(status, expires_at);
CREATE INDEX flow_inbox_expires ON flow_inbox(expires_at);
CREATE TABLE flow_correlations (
  tenant text NOT NULL,
  flow text NOT NULL,
  key_hash text NOT NULL,
  step text NOT NULL,
  status text NOT NULL CHECK (status IN ('open', 'timed_out', 'closed', 'closed_late')),
  opened_at text COLLATE "C" NOT NULL,
  deadline text COLLATE "C" NOT NULL,
  on_timeout_flow text,
  correlation_id text NOT NULL,
  state text,
  closed_at text,
  PRIMARY KEY (tenant, flow, key_hash)
);
CREATE INDEX flow_correlations_due ON flow_correlations(status, deadline);

-- Audit chains ----------------------------------------------------------------------------------
-- One chain per tenant. An append locks the tenant's head row (SELECT ... FOR UPDATE), so nodes
-- appending at once still build one chain.
CREATE TABLE audit_entries (
  tenant text NOT NULL,
  seq bigint NOT NULL,
  event_type text NOT NULL,
  created_at text NOT NULL,
  correlation_id text NOT NULL,
  payload text NOT NULL,                 -- JSON text, hashed exactly as stored
  prev_hash text NOT NULL,
  hash text NOT NULL,
  PRIMARY KEY (tenant, seq)
);
CREATE TABLE audit_heads (
  tenant text PRIMARY KEY,
  seq bigint NOT NULL,
  hash text NOT NULL
);

-- Management UI -----------------------------------------------------------------------------------
CREATE TABLE ui_users (
  id bigserial PRIMARY KEY,
  username text NOT NULL UNIQUE,
  role text NOT NULL CHECK (role IN ('sysadmin', 'support', 'developer')),
  password_hash text NOT NULL,           -- scrypt$N$r$p$salt$hash; never the password
  disabled boolean NOT NULL DEFAULT false,
  created_at text NOT NULL,
  updated_at text NOT NULL
);
CREATE TABLE ui_sessions (
  id_hash text PRIMARY KEY,              -- hex SHA-256 of the cookie value
  user_id bigint NOT NULL REFERENCES ui_users(id),
  created_at_ms bigint NOT NULL,
  last_seen_ms bigint NOT NULL
);
CREATE INDEX ui_sessions_user ON ui_sessions(user_id);
CREATE TABLE ui_secret (
  id integer PRIMARY KEY CHECK (id = 1),
  csrf_hmac_key text NOT NULL
);

-- Imports of a state directory (`svc store migrate`, src/app/store-migrate.ts) ------------------
-- One row per part copied (a table, or one queue), written in the transaction that copies the
-- part's last rows, so a rerun skips what is done and finishes what is not. The row with part
-- 'installation' claims the store for one source; a store holding another's is refused.
CREATE TABLE store_imports (
  source_id text NOT NULL,               -- the installation id of the state directory copied
  part text NOT NULL,                    -- 'installation', a table, or 'queue <tenant>/<flow>'
  copied bigint NOT NULL,                -- rows this part inserted
  done_at text NOT NULL,                 -- ISO 8601 UTC
  detail text,                           -- the source's path ('installation' row)
  PRIMARY KEY (source_id, part)
);
