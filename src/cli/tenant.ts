/** `svc tenant create|list|disable|enable`: tenant registration and its on/off switch. */
import { Command, Option } from 'commander';
import {
  createTenant,
  disableTenant,
  enableTenant,
  listTenants,
  parseAuthMethods,
  type StatusChange,
} from '../app/use-cases/tenants.js';
import { nonEmptyArg, svcArg } from './args.js';
import { addStoreOptions, nameArg, type StoreFlags } from './options.js';
import { withStore } from './stores.js';
import { formatTable, out } from './table.js';
import type { Tenant } from '../store/contracts/index.js';

/** Recorded as the actor on the audit entries these commands write. */
const ACTOR = 'cli';

const authMethodsArg = svcArg((value: string) => parseAuthMethods(value).join(','));

export function registerTenant(program: Command): void {
  const tenant = program.command('tenant').description('register, list, disable and enable tenants');
  tenant
    .command('create')
    .description('register a tenant (active); writes audit tenant.registered')
    .addOption(
      new Option('--id <tenant>', 'tenant id: lowercase letters, digits, "-" and "_"')
        .makeOptionMandatory()
        .argParser(nameArg('tenant')),
    )
    .addOption(
      new Option('--display-name <name>', 'human-readable name')
        .makeOptionMandatory()
        .argParser(nonEmptyArg('--display-name')),
    )
    .addOption(
      new Option('--auth-methods <list>', 'comma-separated; only api_key is accepted')
        .default('api_key')
        .argParser(authMethodsArg),
    )
    .action(tenantCreate);
  tenant
    .command('list')
    .description('list tenants: id, display name, status, auth methods, created_at')
    .addOption(new Option('--json', 'print a JSON array'))
    .action(tenantList);
  tenant
    .command('disable')
    .description('disable a tenant (keys and flows stay; callers get 404); writes audit tenant.disabled')
    .addOption(new Option('--id <tenant>', 'tenant id').makeOptionMandatory().argParser(nameArg('tenant')))
    .action(tenantDisable);
  tenant
    .command('enable')
    .description('enable a disabled tenant (its keys work again at once); writes audit tenant.enabled')
    .addOption(new Option('--id <tenant>', 'tenant id').makeOptionMandatory().argParser(nameArg('tenant')))
    .action(tenantEnable);
  for (const c of tenant.commands) addStoreOptions(c);
}

export interface TenantCreateOptions extends StoreFlags {
  id: string;
  displayName: string;
  authMethods: string;
}

export async function tenantCreate(opts: TenantCreateOptions): Promise<void> {
  const tenant = await withStore(opts, (stores) =>
    createTenant(
      stores,
      { id: opts.id, displayName: opts.displayName, authMethods: parseAuthMethods(opts.authMethods) },
      { actor: ACTOR },
    ),
  );
  out(`registered tenant ${tenant.id}`);
  out(describe(tenant));
}

export interface TenantListOptions extends StoreFlags {
  json?: boolean;
}

export async function tenantList(opts: TenantListOptions): Promise<void> {
  const tenants = await withStore(opts, (stores) => listTenants(stores.tenants), { readOnly: true });
  if (opts.json) {
    out(JSON.stringify(tenants.map(toJson), null, 2));
    return;
  }
  if (tenants.length === 0) {
    out('No tenants registered. Register one with: svc tenant create --id <tenant> --display-name "<name>"');
    return;
  }
  out(
    formatTable(
      ['ID', 'DISPLAY NAME', 'STATUS', 'AUTH METHODS', 'CREATED_AT'],
      tenants.map((t) => [t.id, t.displayName, t.status, t.authMethods.join(','), t.createdAt]),
    ),
  );
}

export interface TenantSwitchOptions extends StoreFlags {
  id: string;
}

export async function tenantDisable(opts: TenantSwitchOptions): Promise<void> {
  report(await withStore(opts, (stores) => disableTenant(stores, opts.id, { actor: ACTOR })), 'disabled');
}

export async function tenantEnable(opts: TenantSwitchOptions): Promise<void> {
  report(await withStore(opts, (stores) => enableTenant(stores, opts.id, { actor: ACTOR })), 'enabled');
}

function report(change: StatusChange, verb: string): void {
  out(
    change.changed
      ? `tenant ${change.tenant.id} ${verb}`
      : `tenant ${change.tenant.id} was already ${verb}; nothing changed`,
  );
}

function describe(t: Tenant): string {
  return [
    `  display name: ${t.displayName}`,
    `  status:       ${t.status}`,
    `  auth methods: ${t.authMethods.join(',')}`,
    `  created_at:   ${t.createdAt}`,
  ].join('\n');
}

function toJson(t: Tenant): Record<string, unknown> {
  return {
    id: t.id,
    display_name: t.displayName,
    status: t.status,
    auth_methods: t.authMethods,
    created_at: t.createdAt,
  };
}
