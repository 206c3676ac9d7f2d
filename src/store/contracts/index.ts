/**
 * The storage contracts: one interface per aggregate, implemented by the embedded SQLite
 * repositories (store/*-repo.ts) and by the PostgreSQL ones (store/pg/). The conformance suite
 * (store/conformance/) runs the same tests against both.
 *
 * Each interface sits beside its SQLite repository; this module is their index. A method returns
 * `Awaitable<T>` (common/awaitable.ts): the SQLite repositories answer synchronously, as they always
 * have, so the request path that holds a concrete SQLite repository keeps calling it without a
 * promise; code written against the contract awaits every call and works on either.
 *
 * There are no open-ended transactions in the contracts. A change that must be atomic (a version
 * and its `latest` pointer, a certificate replaced, a tenant's status and its audit entry) is one
 * method, which the SQLite side runs in one IMMEDIATE transaction and the PostgreSQL side in one
 * transaction on one connection.
 */
export type { Awaitable } from '../../common/awaitable.js';
export type { TenantsStore } from '../sqlite/sqlite-tenants-store.js';
export type { KeysStore } from '../sqlite/sqlite-keys-store.js';
export type { ArtifactsStore } from '../sqlite/sqlite-artifacts-store.js';
export type { SettingsStore } from '../sqlite/sqlite-settings-store.js';
export type { TraceStore } from '../sqlite/sqlite-traces-store.js';
export type { CertificatesStore } from '../sqlite/sqlite-certificates-store.js';
export type { DescriptorsStore } from '../sqlite/sqlite-descriptors-store.js';
export type { UiUsersStore } from '../sqlite/sqlite-ui-users-store.js';
export type { UiSessionsStore } from '../sqlite/sqlite-ui-sessions-store.js';
export type { FlowStateStore } from '../sqlite/sqlite-flow-state-store.js';
export type { AuditStore } from '../sqlite/sqlite-audit-store.js';
export type { TenantAdmin, TenantStatusChange } from '../sqlite/sqlite-tenant-admin-store.js';
export type { EventLogStore } from '../sqlite/sqlite-event-log-store.js';
