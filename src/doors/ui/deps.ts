/** What the UI door needs from the rest of the service (wired by src/serve/): stores and use-case inputs, no rules. */
import type { DlqTarget } from '../../app/dlq.js';
import type { LoginThrottle } from '../../app/login-throttle.js';
import type { UiAccountDeps, SessionTimeouts } from '../../app/ui-accounts.js';
import type { Logger } from '../../common/logger.js';
import type { ArtifactsRepo } from '../../store/artifacts-repo.js';
import type { CertificatesRepo } from '../../store/certificates-repo.js';
import type { AuditRepo } from '../../store/audit-repo.js';
import type { EventLogRepo } from '../../store/event-log-repo.js';
import type { KeysRepo } from '../../store/keys-repo.js';
import type { SettingsRepo } from '../../store/settings-repo.js';
import type { TenantsRepo } from '../../store/tenants-repo.js';
import type { TraceRepo } from '../../store/trace-repo.js';

export interface UiDeps {
  readonly accounts: UiAccountDeps;
  readonly throttle: LoginThrottle;
  readonly timeouts?: SessionTimeouts;
  readonly tenants: TenantsRepo;
  readonly keys: KeysRepo;
  readonly artifacts: ArtifactsRepo;
  readonly traces: TraceRepo;
  readonly certificates: CertificatesRepo;
  readonly settings: SettingsRepo;
  readonly audit: AuditRepo;
  readonly events: EventLogRepo;
  /** The server's own queue store. */
  readonly queues: DlqTarget;
  /** Makes sure a queue has a worker after a dead letter was put back on it. */
  ensureWorker(tenant: string, flow: string): void;
  /** Facts for the Overview page. */
  readonly facts: { readonly stateDir: string; readonly signature: boolean; readonly apiKeys: boolean; readonly startedAt: number };
  readonly log: Logger;
}
