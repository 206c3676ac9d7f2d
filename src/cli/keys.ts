/** `svc keys create|list|revoke`: API keys. The raw key is printed once, at creation. */
import { Command, Option } from 'commander';
import {
  createApiKey,
  listApiKeys,
  parseExpiresAt,
  parseFlows,
  parseRateLimit,
  parseScopes,
  rateLimitBurst,
  revokeApiKey,
  type KeyView,
} from '../app/use-cases/keys.js';
import { nonEmptyArg, svcArg } from './args.js';
import { addStoreOptions, intArg, type StoreFlags, tenantOption } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';
import { keyStatus, type ApiKeyRow } from '../store/contracts/index.js';

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('create, list and revoke API keys');
  keys
    .command('create')
    .description('create an API key for a registered, enabled tenant and print it once')
    .addOption(tenantOption('tenant the key belongs to', { required: true }))
    .addOption(
      new Option('--label <text>', 'what the key is for').makeOptionMandatory().argParser(nonEmptyArg('--label')),
    )
    .addOption(
      new Option('--scopes <list>', 'comma-separated scopes; * matches every scope (default: *)').argParser(
        svcArg(parseScopes),
      ),
    )
    .addOption(
      new Option(
        '--expires-at <ts>',
        'YYYY-MM-DD (through 23:59:59Z that day) or YYYY-MM-DDTHH:MM:SSZ; no offsets',
      ).argParser(svcArg(parseExpiresAt)),
    )
    .addOption(
      new Option('--rate-limit <rps>', 'requests per second (burst 2 x rps); default unlimited').argParser(
        svcArg(parseRateLimit),
      ),
    )
    .addOption(
      new Option('--flows <list>', 'comma-separated flow allowlist (default: every flow of the tenant)').argParser(
        svcArg(parseFlows),
      ),
    )
    .addOption(new Option('--json', 'print the result as JSON (still the only time the key is shown)'))
    .action(keysCreate);
  keys
    .command('list')
    .description("list a tenant's keys: id, label, status, flows, scopes, created_at (never the key)")
    .addOption(tenantOption('tenant', { required: true }))
    .addOption(new Option('--json', 'print a JSON array'))
    .action(keysList);
  keys
    .command('revoke')
    .description('revoke a key at once and for good (the row is kept)')
    .addOption(
      new Option('--id <n>', 'key id, as shown by keys create and keys list')
        .makeOptionMandatory()
        .argParser(intArg('--id', 1)),
    )
    .action(keysRevoke);
  for (const c of keys.commands) addStoreOptions(c);
}

export interface KeysCreateOptions extends StoreFlags {
  tenant: string;
  label: string;
  scopes?: string[];
  expiresAt?: string;
  rateLimit?: number;
  flows?: string[];
  json?: boolean;
}

export async function keysCreate(opts: KeysCreateOptions): Promise<void> {
  const now = new Date();
  const { row, rawKey } = await withStore(opts, (stores) =>
    createApiKey(
      stores,
      {
        tenant: opts.tenant,
        label: opts.label,
        scopes: opts.scopes,
        flows: opts.flows,
        expiresAt: opts.expiresAt,
        rateLimit: opts.rateLimit,
      },
      now,
    ),
  );
  if (opts.json) {
    out(JSON.stringify({ ...toJson(row, keyStatus(row, now)), key: rawKey }, null, 2));
  } else {
    out(`created API key ${row.id} for tenant ${row.tenant}`);
    out(
      [
        `  id:         ${row.id}`,
        `  tenant:     ${row.tenant}`,
        `  label:      ${row.label}`,
        `  scopes:     ${row.scopes.join(',')}`,
        `  flows:      ${row.flows.length === 0 ? '(all flows)' : row.flows.join(',')}`,
        `  rate limit: ${row.rateLimit === null ? 'unlimited' : `${row.rateLimit} req/s (burst ${rateLimitBurst(row.rateLimit)})`}`,
        `  expires_at: ${row.expiresAt ?? 'never'}`,
        `  key:        ${rawKey}`,
      ].join('\n'),
    );
  }
  process.stderr.write(
    'Store the key now: it is shown only this once and cannot be recovered (only its SHA-256 is kept).\n',
  );
  if (keyStatus(row, now) === 'expired') {
    process.stderr.write(`warning: the key's expiry ${row.expiresAt} has already passed; it is created expired\n`);
  }
}

export interface KeysListOptions extends StoreFlags {
  tenant: string;
  json?: boolean;
}

export async function keysList(opts: KeysListOptions): Promise<void> {
  const views = await withStore(opts, (stores) => listApiKeys(stores, opts.tenant), { readOnly: true });
  if (opts.json) {
    out(
      JSON.stringify(
        views.map((v) => toJson(v.row, v.status)),
        null,
        2,
      ),
    );
    return;
  }
  if (views.length === 0) {
    out(
      `No API keys for tenant ${opts.tenant}. Create one with: svc keys create --tenant ${opts.tenant} --label <label>`,
    );
    return;
  }
  out(
    formatTable(
      ['ID', 'LABEL', 'STATUS', 'FLOWS', 'SCOPES', 'CREATED_AT', 'EXPIRES_AT'],
      views.map(({ row, status }: KeyView) => [
        String(row.id),
        row.label,
        status,
        row.flows.length === 0 ? '(all)' : row.flows.join(','),
        row.scopes.join(','),
        row.createdAt,
        row.expiresAt ?? '-',
      ]),
    ),
  );
}

export interface KeysRevokeOptions extends StoreFlags {
  id: number;
}

export async function keysRevoke(opts: KeysRevokeOptions): Promise<void> {
  const row = await withStore(opts, (stores) => revokeApiKey(stores.keys, opts.id));
  out(`revoked API key ${row.id} (tenant ${row.tenant}, label ${row.label}) at ${row.revokedAt}`);
}

function toJson(row: ApiKeyRow, status: string): Record<string, unknown> {
  return {
    id: row.id,
    tenant: row.tenant,
    label: row.label,
    status,
    scopes: row.scopes,
    flows: row.flows,
    rate_limit: row.rateLimit,
    burst: row.rateLimit === null ? null : rateLimitBurst(row.rateLimit),
    expires_at: row.expiresAt,
    revoked_at: row.revokedAt,
    created_at: row.createdAt,
  };
}
