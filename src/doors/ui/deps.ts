/** What the UI door needs from the rest of the service (wired by src/serve/): stores and use-case inputs, no rules. */
import type { DlqTarget } from '../../app/use-cases/dlq.js';
import type { ExampleContext } from '../../app/testing/run-example.js';
import type { LoginThrottle } from '../../app/accounts/login-throttle.js';
import type { UiAccountDeps, SessionTimeouts } from '../../app/accounts/ui-accounts.js';
import type { Awaitable } from '../../common/awaitable.js';
import type { Logger } from '../../common/logger.js';
import type {
  ArtifactsStore,
  AuditStore,
  CertificatesStore,
  KeysStore,
  SettingsStore,
  TenantAdmin,
  TenantsStore,
  TraceStore,
  EventLogStore,
} from '../../store/contracts/index.js';

export interface UiDeps {
  readonly accounts: UiAccountDeps;
  readonly throttle: LoginThrottle;
  readonly timeouts?: SessionTimeouts;
  readonly tenants: TenantsStore;
  /** Tenant registration and status changes, each with its audit entry. */
  readonly tenantAdmin: TenantAdmin;
  readonly keys: KeysStore;
  readonly artifacts: ArtifactsStore;
  readonly traces: TraceStore;
  readonly certificates: CertificatesStore;
  readonly settings: SettingsStore;
  readonly audit: AuditStore;
  readonly events: EventLogStore;
  /** The server's own queue store. */
  readonly queues: DlqTarget;
  /**
   * Settles once this node's own reads (the gate, /run) see every write committed so far: a form's
   * answer waits for it, so a key revoked on this node's UI is refused by this node at once. At once
   * on SQLite; one round of the change log on a --store node.
   */
  caughtUp(): Awaitable<void>;
  /** The Replay page's runner: svc test's doors and a scratch flow-state store (the composition's). */
  readonly replay: Omit<ExampleContext, 'flows'>;
  /** Makes sure a queue has a worker after a dead letter was put back on it. */
  ensureWorker(tenant: string, flow: string): void;
  /** Facts for the Overview page. */
  readonly facts: {
    readonly stateDir: string;
    readonly signature: boolean;
    readonly apiKeys: boolean;
    readonly startedAt: number;
  };
  readonly log: Logger;
}
