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
export type { Awaitable } from '../common/awaitable.js';
export type { TenantsStore } from './tenants-repo.js';
export type { KeysStore } from './keys-repo.js';
export type { ArtifactsStore } from './artifacts-repo.js';
export type { SettingsStore } from './settings-repo.js';
export type { TraceStore } from './trace-repo.js';
export type { CertificatesStore } from './certificates-repo.js';
export type { DescriptorsStore } from './descriptors-repo.js';
export type { UiUsersStore } from './ui-users-repo.js';
export type { UiSessionsStore } from './ui-sessions-repo.js';
export type { FlowStateStore } from './flow-state-repo.js';
export type { AuditStore } from './audit-repo.js';
export type { TenantAdmin, TenantStatusChange } from './tenant-admin-repo.js';
export type { EventLogStore } from './event-log-repo.js';
