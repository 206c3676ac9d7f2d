/**
 * What a conformance suite is given: a way to open a fresh, empty store of one kind. Each suite
 * (`*.conformance.ts`) is a function of it and is run once per backend, by sqlite.test.ts and
 * postgres.test.ts, so both implementations of a contract answer the same tests.
 */
import type {
  ArtifactsStore,
  AuditStore,
  CertificatesStore,
  DescriptorsStore,
  EventLogStore,
  FlowStateStore,
  KeysStore,
  SettingsStore,
  TenantsStore,
  TraceStore,
  UiSessionsStore,
  UiUsersStore,
  TenantAdmin,
} from '../../../src/store/contracts/index.js';
import type { Stores } from '../../../src/storage/index.js';
import type { EventLog, EventLogTuning } from '../../../src/store/event-log/event-log.js';

export interface StoreBackend {
  readonly tenants: TenantsStore;
  readonly keys: KeysStore;
  readonly artifacts: ArtifactsStore;
  readonly settings: SettingsStore;
  readonly traces: TraceStore;
  readonly uiUsers: UiUsersStore;
  readonly uiSessions: UiSessionsStore;
  readonly certificates: CertificatesStore;
  readonly descriptors: DescriptorsStore;
  readonly flowState: FlowStateStore;
  readonly audit: AuditStore;
  /**
   * Runs one statement on the audit tables behind the contract's back (tests that tamper with a
   * chain); written in the SQL both backends speak, literals only.
   */
  auditSql(sql: string): Promise<void>;
  readonly tenantAdmin: TenantAdmin;
  /** The event log's read side. */
  readonly eventLog: EventLogStore;
  /**
   * A new writer of this store's event log (EventLog on `log.db`, inline, or on the PostgreSQL
   * pool), as a node of the service opens it; the caller closes it before the store.
   */
  openEventWriter(opts?: EventLogTuning): EventLog;
  /** Runs one query on the event log's database behind the contract's back (inspection); its rows. */
  eventSql(sql: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export interface BackendKind {
  readonly name: 'sqlite' | 'postgres';
  /** A new store with nothing in it. */
  open(): Promise<StoreBackend>;
  /** Opens `n` handles on one new store (several processes or nodes sharing it). */
  openShared(n: number): Promise<StoreBackend[]>;
  /**
   * A new store whose event log's schema stops before the rollup blocks' migration (log.db's 10,
   * PostgreSQL's 0010), `seedSql` run on it (statements both backends speak), then opened as the
   * service opens it: the newer migrations applied to the rows already there.
   */
  openUpgradedFromBeforeBlocks(seedSql: readonly string[]): Promise<StoreBackend>;
}

/** The contracts of an opened store, as a backend hands them to the suites (each backend adds its inspection hooks). */
export function contractsOf(s: Stores): Omit<StoreBackend, 'auditSql' | 'openEventWriter' | 'eventSql' | 'close'> {
  return {
    tenants: s.tenants,
    tenantAdmin: s.tenantAdmin,
    keys: s.keys,
    artifacts: s.artifacts,
    settings: s.settings,
    traces: s.traces,
    uiUsers: s.uiUsers,
    uiSessions: s.uiSessions,
    certificates: s.certificates,
    descriptors: s.descriptors,
    flowState: s.flowState,
    audit: s.audit,
    eventLog: s.eventLog,
  };
}
