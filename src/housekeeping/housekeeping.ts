/**
 * The background timers of `svc serve`: log retention and the flow-state purge (every 6 h and at
 * startup), the correlation reconcile (every 60 s, first pass at once). Each task runs at most
 * once at a time; a failing cycle is logged and the next one runs as usual.
 */
import type { Logger } from '../common/logger.js';
import type { Correlations, EnqueueFn } from '../app/correlation.js';
import type { EventLogRepo } from '../store/event-log-repo.js';
import type { FlowStateRepo } from '../store/flow-state-repo.js';
import { runFlowStatePurge } from './flow-state-purge.js';
import type { HousekeepingIntervals } from './intervals.js';
import { runLogRetention } from './log-retention.js';

export interface HousekeepingDeps {
  log: Logger;
  intervals: HousekeepingIntervals;
  logRepo: EventLogRepo;
  logsDir: string;
  /** `log_retention_days`, read at the start of each cycle. */
  logRetentionDays: () => number;
  flowState: FlowStateRepo;
  /** `flow_state_retention_hours`, read once at startup. */
  flowStateRetentionHours: number;
  correlations: Correlations;
  /** Appends the compensating flow's message; undefined until the queue is wired (timeouts are then logged). */
  enqueue: EnqueueFn | undefined;
}

export class Housekeeping {
  readonly #deps: HousekeepingDeps;
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #running = new Set<Promise<void>>();
  #stopped = false;

  constructor(deps: HousekeepingDeps) {
    this.#deps = deps;
  }

  /** Starts every timer; each task's first cycle runs at once. */
  start(): void {
    const { intervals } = this.#deps;
    this.#every('log retention', intervals.logRetentionMs, () => this.logRetention());
    this.#every('flow-state purge', intervals.flowStatePurgeMs, () => this.flowStatePurge());
    this.#every('correlation reconcile', intervals.correlationReconcileMs, () => this.reconcile());
  }

  async logRetention(): Promise<void> {
    const d = this.#deps;
    const r = await runLogRetention(d.logRepo, d.logsDir, d.logRetentionDays(), { stopping: () => this.#stopped });
    if (r.rowsDeleted > 0 || r.filesDeleted.length > 0) d.log.info(`log retention: ${r.rowsDeleted} row(s) and ${r.filesDeleted.length} file(s) deleted`);
  }

  flowStatePurge(): void {
    const r = runFlowStatePurge(this.#deps.flowState, this.#deps.flowStateRetentionHours);
    if (r.inboxDeleted > 0 || r.correlationsDeleted > 0) {
      this.#deps.log.info(`flow-state purge: ${r.inboxDeleted} deduplication row(s), ${r.correlationsDeleted} correlation row(s) deleted`);
    }
  }

  async reconcile(): Promise<void> {
    const { correlations, enqueue, log } = this.#deps;
    const rows = await correlations.reconcile(enqueue, (row, err) =>
      log.error({ err }, `correlation ${row.tenant}/${row.flow} (correlation id ${row.correlation_id}) timed out but its compensating flow ${row.on_timeout_flow} was not enqueued`),
    );
    for (const row of rows) log.info(`correlation ${row.tenant}/${row.flow} (correlation id ${row.correlation_id}) timed out`);
  }

  #every(name: string, ms: number, task: () => void | Promise<void>): void {
    let busy = false;
    const cycle = () => {
      if (busy || this.#stopped) return;
      busy = true;
      const p = (async () => {
        try {
          await task();
        } catch (err) {
          this.#deps.log.error({ err }, `${name} cycle failed`);
        } finally {
          busy = false;
        }
      })();
      this.#running.add(p);
      void p.finally(() => this.#running.delete(p));
    };
    cycle();
    const timer = setInterval(cycle, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  /** Stops the timers and waits for any cycle in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    await Promise.all([...this.#running]);
  }
}
