/** The roles of the people who operate the service (spec: "Management UI accounts"); what each may do is decided in app/. */
import { SvcError } from '../../common/errors.js';
import type { UiRole } from '../../store/contracts/index.js';

export type Role = UiRole;

export const ROLES: readonly Role[] = Object.freeze(['sysadmin', 'support', 'developer']);

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** Who is acting: their role, and the name recorded on the audit entries they cause (e.g. `cli`, `ui:alice`). */
export interface Actor {
  readonly role: Role;
  readonly name: string;
}

/** The operator holding the state directory at a shell: a sysadmin (spec-level: they could edit the files anyway). */
export const CLI_OPERATOR: Actor = Object.freeze({ role: 'sysadmin', name: 'cli' });

/** What a person may do through the UI (and, as a sysadmin, the CLI). The whole matrix is in docs/ui.md. */
export type Permission =
  | 'read' // registry, flows, executions and logs, queues, audit (and its verification), settings, certificates
  | 'read_traces' // trace rows (only support: the spec)
  | 'toggle_trace' // the trace flag (only sysadmin: the spec)
  | 'manage_dead_letters' // replay and discard
  | 'manage_tenants'
  | 'manage_keys'
  | 'edit_settings'
  | 'manage_ui_users';

const MATRIX: Readonly<Record<Role, ReadonlySet<Permission>>> = Object.freeze({
  sysadmin: new Set<Permission>([
    'read',
    'toggle_trace',
    'manage_dead_letters',
    'manage_tenants',
    'manage_keys',
    'edit_settings',
    'manage_ui_users',
  ]),
  support: new Set<Permission>(['read', 'read_traces', 'manage_dead_letters']),
  developer: new Set<Permission>(['read']),
});

export function can(actor: Actor, permission: Permission): boolean {
  return MATRIX[actor.role].has(permission);
}

/** @throws SvcError 403 naming the role when the actor may not do it */
export function requirePermission(actor: Actor, permission: Permission, what: string): void {
  if (!can(actor, permission)) throw new SvcError('SVC_ERR_FORBIDDEN', `forbidden: a ${actor.role} may not ${what}`);
}
