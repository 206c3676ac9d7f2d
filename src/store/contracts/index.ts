/**
 * The storage contracts, the store layer's public face: one module per aggregate holding its
 * interface, its domain types, the row shapes and mappers both backends share, and its domain
 * errors. The SQLite stores (store/sqlite/) and the PostgreSQL ones (store/pg/) implement them and
 * import only these modules, never each other; the conformance suite (test/conformance/store/)
 * runs the same tests against both.
 *
 * A method returns `Awaitable<T>` (common/awaitable.ts): the SQLite stores answer synchronously, as
 * they always have, so the request path that holds a concrete SQLite store keeps calling it without
 * a promise; code written against the contract awaits every call and works on either.
 *
 * There are no open-ended transactions in the contracts. A change that must be atomic (a version
 * and its `latest` pointer, a deploy of many flows, a certificate replaced, a tenant's status and
 * its audit entry) is one method, which the SQLite side runs in one IMMEDIATE transaction and the
 * PostgreSQL side in one transaction on one connection.
 */
export type { Awaitable } from '../../common/awaitable.js';
export { toTenant, tenantExists, isUniqueViolation } from './tenants.js';
export type { TenantStatus, Tenant, NewTenant, TenantRow, TenantsStore } from './tenants.js';
export { KEY_PREFIX, generateKey, hashKey, keyStatus, KEY_COLUMNS, keyFromRecord } from './keys.js';
export type { KeyStatus, ApiKeyRow, NewApiKey, RevokeOutcome, KeyRecord, KeysStore } from './keys.js';
export { DuplicateVersionError, verifiedArtifact, publishedBytes, publishRefusalReason } from './artifacts.js';
export type {
  FlowVersionRef,
  LatestRef,
  VersionListing,
  PublishInput,
  PublishTarget,
  PublishRefusal,
  PublishRefusalReason,
  ArtifactsStore,
} from './artifacts.js';
export { assertSettingName, isSettingName, isAccepted, settingText, settingValues } from './settings.js';
export type { SettingValue, SettingsStore } from './settings.js';
export type { TraceFlag, TraceStore } from './traces.js';
export { certificateFromRecord, certificateParams } from './certificates.js';
export type { CertKind, CertificateRow, NewCertificate, CertificateRecord, CertificatesStore } from './certificates.js';
export {
  DESCRIPTOR_COLUMNS,
  DESCRIPTOR_FROM,
  DESCRIPTOR_LATEST_FROM,
  descriptorExists,
  toDescriptorInfo,
  toStoredDescriptor,
} from './descriptors.js';
export type {
  DescriptorInfo,
  StoredDescriptor,
  NewDescriptor,
  DescriptorRecord,
  DescriptorReads,
  DescriptorsStore,
} from './descriptors.js';
export { toUiUser, uiCredentials } from './ui-users.js';
export type { UiRole, UiUser, UiUserRecord, NewUiUser, UiUsersStore } from './ui-users.js';
export { UI_SESSION_COLUMNS, toUiSession } from './ui-sessions.js';
export type { UiSessionRow, UiSessionRecord, UiSessionsStore } from './ui-sessions.js';
export { stateUnavailable, stateFilterSql, claimable } from './flow-state.js';
export type {
  InboxStatus,
  CorrelationStatus,
  InboxRow,
  CorrelationRow,
  ClaimRequest,
  ClaimOutcome,
  StateFilter,
  FlowStateStore,
  FinishRequest,
  ReclaimOptions,
  ReclaimResult,
} from './flow-state.js';
export {
  GENESIS_HASH,
  auditHash,
  chainEntry,
  prepareAuditEntry,
  packAuditEntries,
  PACKED_WIDTH,
  unpackAuditEntries,
  auditEntryFromRow,
  AUDIT_COLUMNS,
  AUDIT_VERIFY_PAGE,
  AuditChainCheck,
} from './audit.js';
export type {
  AuditEntryInput,
  AuditEntry,
  PreparedAuditEntry,
  AuditVerifyResult,
  AuditStore,
  AuditPageQuery,
  AuditHead,
  AuditRow,
  AuditSnapshot,
} from './audit.js';
export type { TenantStatusChange, TenantAdmin } from './tenant-admin.js';
export {
  EVENT_KINDS,
  TRACE_EVENTS,
  TERMINAL_EVENTS,
  TRACE_KINDS_SQL,
  toStoredEvent,
  toEventCounts,
  exactMatches,
  statusRange,
  kindList,
  packRow,
  ROW_WIDTH,
} from './event-log.js';
export type {
  EventKind,
  EventRow,
  RowColumns,
  EventQuery,
  TraceQuery,
  StoredEvent,
  EventCounts,
  EventLogStore,
} from './event-log.js';
export type { RegistryReads } from './registry-reads.js';
export {
  LATENCY_BOUNDS_MS,
  LATENCY_BUCKETS,
  BUCKET_COLUMNS,
  ROLLUP_INSERT_COLUMNS,
  ROLLUP_ADDED_COLUMNS,
  ROLLUP_COUNT_COLUMNS,
  latencyBucket,
  latencyQuantile,
  rollupFromRecord,
  rollupCountFromRecord,
  rollupSelect,
  rollupValues,
  BLOCK_MINUTES,
  rollupBlock,
  blockAdds,
  blockAddValues,
  ROLLUP_BLOCK_COLUMNS,
  ROLLUP_BLOCK_UPSERT_TAIL,
  flowTotalsPlan,
  flowTotalsSelect,
  flowTotalFromRecord,
  blockTrimUpdate,
  QUEUE_SAMPLE_COLUMNS,
  QUEUE_SAMPLE_UPSERT_TAIL,
  queueSampleFromRecord,
  queueSampleSelect,
  queueSampleValues,
} from './rollups.js';
export type {
  RollupKey,
  RollupRow,
  RollupQuery,
  RollupPoint,
  RollupCount,
  BlockAdd,
  FlowTotal,
  EdgeRead,
  QueueSample,
  QueueSampleQuery,
  Aggregates,
} from './rollups.js';
