/**
 * The background timers of `svc serve`: log retention and the flow-state purge (every 6 h and at
 * startup), the correlation reconcile (every 60 s, first pass at once). Each task runs at most
 * once at a time; a failing cycle is logged and the next one runs as usual.
 */
import type { Logger } from '../common/logger.js';
import type { Correlations, EnqueueFn } from '../app/runtime/correlation.js';
import type { FlowStateStore } from '../store/contracts/index.js';
import { claimWindowMs, runCertSweep, type CertSweepDeps } from './cert-sweep.js';
import { runFlowStatePurge, type ReclaimFn } from './flow-state-purge.js';
import type { HousekeepingIntervals } from './intervals.js';
import { runLogRetention, type LogRows } from './log-retention.js';
import { startPeriodicTask, type PeriodicTask } from './periodic-task.js';

export interface HousekeepingDeps {
  log: Logger;
  intervals: HousekeepingIntervals;
  /** The event writer: retention deletes on its thread, between its batches. */
  logRows: LogRows;
  logsDir: string;
  /** `log_retention_days`, read at the start of each cycle. */
  logRetentionDays: () => number;
  flowState: FlowStateStore;
  /** The vacuum step after the flow-state purge (FlowStateStore.reclaimFreePages: nothing to give back on PostgreSQL). */
  reclaimFlowStatePages?: ReclaimFn | undefined;
  /** `flow_state_retention_hours`, read once at startup. */
  flowStateRetentionHours: number;
  correlations: Correlations;
  /** Appends the compensating flow's message; undefined until the queue is wired (timeouts are then logged). */
  enqueue: EnqueueFn | undefined;
  /**
   * Whether this process runs the cluster-wide cycles now (flow-state purge, correlation reconcile,
   * certificate sweep): on a cluster, only the node holding the housekeeping lock does, so each runs
   * once per cluster. Log retention runs on every node, for its own daily files; its rows part is
   * the caller's to gate (`logRows`). @default always
   */
  leading?: () => boolean;
  /** The certificate expiry sweep (at startup and every `cert_check_interval_hours`). */
  certSweep: CertSweepDeps;
}

export class Housekeeping {
  readonly #deps: HousekeepingDeps;
  readonly #tasks: PeriodicTask[] = [];
  #stopped = false;
  #certSweptOnce = false;

  constructor(deps: HousekeepingDeps) {
    this.#deps = deps;
  }

  /** Starts every timer; each task's first cycle runs at once. */
  start(): void {
    const { intervals, log } = this.#deps;
    const leading = this.#deps.leading ?? (() => true);
    const every = (name: string, ms: number, run: () => void | Promise<void>, perNode = false) =>
      this.#tasks.push(
        startPeriodicTask({
          name,
          run: () => (perNode || leading() ? run() : undefined),
          intervalMs: () => ms,
          log,
          runAtStart: true,
        }),
      );
    every('log retention', intervals.logRetentionMs, () => this.logRetention(), true);
    every('flow-state purge', intervals.flowStatePurgeMs, () => this.flowStatePurge());
    every('correlation reconcile', intervals.correlationReconcileMs, () => this.reconcile());
    every('certificate sweep', this.#deps.certSweep.intervalMs, () => this.certSweep());
  }

  /**
   * This node has just become the one that runs the cluster-wide cycles: every cycle runs at once,
   * as on a lone node at start (one skipped while another node led would otherwise wait a whole
   * interval: a day for the certificate sweep; log retention's rows part is the leader's too).
   */
  leadTaken(): void {
    for (const task of this.#tasks) task.runNow();
  }

  async logRetention(): Promise<void> {
    const d = this.#deps;
    const r = await runLogRetention(d.logRows, d.logsDir, d.logRetentionDays(), { stopping: () => this.#stopped });
    if (r.rowsDeleted > 0 || r.filesDeleted.length > 0 || r.pagesFreed > 0) {
      d.log.info(
        {
          longest_delete_slice_ms: Math.round(r.longestDeleteSliceMs),
          longest_vacuum_slice_ms: Math.round(r.longestVacuumSliceMs),
        },
        `log retention: ${r.rowsDeleted} row(s) and ${r.filesDeleted.length} file(s) deleted${r.pagesFreed > 0 ? `, ${r.pagesFreed} page(s) of log.db given back` : ''}`,
      );
    }
  }

  async flowStatePurge(): Promise<void> {
    const d = this.#deps;
    const r = await runFlowStatePurge(d.flowState, d.flowStateRetentionHours, {
      stopping: () => this.#stopped,
      reclaim: d.reclaimFlowStatePages,
    });
    if (r.inboxDeleted > 0 || r.correlationsDeleted > 0 || r.pagesFreed > 0) {
      d.log.info(
        `flow-state purge: ${r.inboxDeleted} deduplication row(s), ${r.correlationsDeleted} correlation row(s) deleted, ${r.pagesFreed} page(s) of the registry given back`,
      );
    }
  }

  async reconcile(): Promise<void> {
    const { correlations, enqueue, log } = this.#deps;
    const rows = await correlations.reconcile(enqueue, (row, err) =>
      log.error(
        { err },
        `correlation ${row.tenant}/${row.flow} (correlation id ${row.correlation_id}) timed out but its compensating flow ${row.on_timeout_flow} was not enqueued`,
      ),
    );
    for (const row of rows)
      log.info(`correlation ${row.tenant}/${row.flow} (correlation id ${row.correlation_id}) timed out`);
  }

  async certSweep(): Promise<void> {
    // The first sweep of this process is its start-up sweep (claimWindowMs).
    const atStart = !this.#certSweptOnce;
    this.#certSweptOnce = true;
    const { certSweep, intervals } = this.#deps;
    const r = await runCertSweep(
      certSweep,
      Date.now(),
      claimWindowMs(certSweep.intervalMs, atStart, intervals.certStartShareMs),
    );
    if (r.swept && r.emitted > 0)
      this.#deps.log.warn(
        `certificate sweep: ${r.emitted} certificate(s) expiring or expired (cert_expiring / cert_expired in the event log)`,
      );
  }

  /** Stops the timers and waits for any cycle in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#tasks.map((t) => t.stop()));
  }
}
