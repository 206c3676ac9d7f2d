/**
 * Tenant use cases: register, list, disable, enable, and the "registered and enabled" check that
 * key creation and deploy share. Every real transition writes its audit entry; a no-op writes none.
 */
import { isoNow } from '../../common/clock.js';
import { SvcError } from '../../common/errors.js';
import { describeNameProblem } from '../../common/names.js';
import type { TenantAdmin, TenantsStore, Tenant, TenantStatus } from '../../store/contracts/index.js';

/** The only authentication method a tenant may declare today. */
export const AUTH_METHODS: readonly string[] = Object.freeze(['api_key']);

/** The audited tenant changes (register, disable, enable), each with its entry in one atomic step. */
export interface TenantDeps {
  readonly tenantAdmin: TenantAdmin;
}

/** Who and what caused a change, recorded on its audit entry. */
export interface ChangeContext {
  /** @default a fresh UUID v4 (SqliteAuditStore's default) */
  readonly correlationId?: string;
  /** e.g. `cli`, `ui:alice`; recorded in the payload when given. */
  readonly actor?: string;
}

/** Why a tenant cannot be used: it was never registered, or it is disabled. */
export class TenantNotActiveError extends SvcError {
  constructor(
    readonly tenant: string,
    readonly reason: 'unregistered' | 'disabled',
  ) {
    super(
      'SVC_ERR_TENANT_NOT_FOUND',
      reason === 'unregistered'
        ? `tenant "${tenant}" is not registered; register it first with: svc tenant create --id ${tenant} --display-name "<name>"`
        : `tenant "${tenant}" is disabled; enable it first with: svc tenant enable --id ${tenant}`,
    );
    this.name = 'TenantNotActiveError';
  }
}

/**
 * The tenant, when registered and enabled. Used by key creation and deploy (never by the gate,
 * which must answer a disabled tenant exactly like an absent one).
 * @throws TenantNotActiveError naming the command that repairs it
 */
export async function requireActiveTenant(tenants: TenantsStore, id: string): Promise<Tenant> {
  const tenant = await tenants.get(id);
  if (tenant === undefined) throw new TenantNotActiveError(id, 'unregistered');
  if (tenant.status !== 'active') throw new TenantNotActiveError(id, 'disabled');
  return tenant;
}

/** The registered tenant. @throws SvcError `SVC_ERR_TENANT_NOT_FOUND` */
export async function requireTenant(tenants: TenantsStore, id: string): Promise<Tenant> {
  const tenant = await tenants.get(id);
  if (tenant === undefined) throw new TenantNotActiveError(id, 'unregistered');
  return tenant;
}

export function assertName(what: string, value: string): void {
  const problem = describeNameProblem(what, value);
  if (problem !== undefined) throw new SvcError('SVC_ERR_INVALID_NAME', problem);
}

/**
 * Reads `--auth-methods`: a comma-separated, ordered list (duplicates collapse). Only `api_key`
 * is accepted. @default ['api_key']
 */
export function parseAuthMethods(text: string | undefined): string[] {
  if (text === undefined) return [...AUTH_METHODS];
  const methods = [...new Set(text.split(',').map((m) => m.trim()))];
  const refused = methods.filter((m) => !AUTH_METHODS.includes(m));
  if (refused.length > 0 || methods.length === 0) {
    const shown = refused.length > 0 ? refused.map((m) => `"${m}"`).join(', ') : '(empty)';
    throw new SvcError(
      'SVC_ERR_INVALID_INPUT',
      `auth method ${shown} is not supported; the only accepted value is api_key`,
    );
  }
  return methods;
}

export interface NewTenantInput {
  readonly id: string;
  readonly displayName: string;
  /** @default ['api_key'] */
  readonly authMethods?: readonly string[];
}

/** Registers an active tenant and writes `tenant.registered`. A taken id is refused (SVC_ERR_CONFLICT). */
export async function createTenant(deps: TenantDeps, input: NewTenantInput, ctx: ChangeContext = {}): Promise<Tenant> {
  assertName('tenant', input.id);
  const displayName = input.displayName.trim();
  if (displayName === '') throw new SvcError('SVC_ERR_INVALID_INPUT', 'the display name must not be empty');
  const authMethods = parseAuthMethods((input.authMethods ?? AUTH_METHODS).join(','));
  // The registry change and its entry are one step of the store (TenantAdmin): both or neither.
  return deps.tenantAdmin.createTenant(
    { id: input.id, displayName, authMethods, createdAt: isoNow() },
    {
      tenant: input.id,
      eventType: 'tenant.registered',
      correlationId: ctx.correlationId,
      payload: { display_name: displayName, auth_methods: authMethods, ...actorField(ctx) },
    },
  );
}

export async function listTenants(tenants: TenantsStore): Promise<Tenant[]> {
  return tenants.list();
}

export interface StatusChange {
  readonly tenant: Tenant;
  /** False when the tenant already had the requested status (no audit entry was written). */
  readonly changed: boolean;
}

/** Disables a tenant (keys and artifacts stay). Disabling a disabled tenant succeeds and writes nothing. */
export async function disableTenant(deps: TenantDeps, id: string, ctx: ChangeContext = {}): Promise<StatusChange> {
  return setStatus(deps, id, 'disabled', ctx);
}

/** Enables a tenant; its keys authenticate again at once. Enabling an active tenant writes nothing. */
export async function enableTenant(deps: TenantDeps, id: string, ctx: ChangeContext = {}): Promise<StatusChange> {
  return setStatus(deps, id, 'active', ctx);
}

async function setStatus(
  deps: TenantDeps,
  id: string,
  status: TenantStatus,
  ctx: ChangeContext,
): Promise<StatusChange> {
  assertName('tenant', id);
  const r = await deps.tenantAdmin.setTenantStatus(id, status, (before) => ({
    tenant: id,
    eventType: status === 'disabled' ? 'tenant.disabled' : 'tenant.enabled',
    correlationId: ctx.correlationId,
    payload: { from: before.status, to: status, ...actorField(ctx) },
  }));
  if (r === undefined) throw new TenantNotActiveError(id, 'unregistered');
  return { tenant: r.after, changed: r.changed };
}

function actorField(ctx: ChangeContext): { actor?: string } {
  return ctx.actor === undefined ? {} : { actor: ctx.actor };
}
