/**
 * Cron schedules (`schedule:`, six fields, seconds first, UTC). The list is read once at startup.
 * Only one process per state directory (or node per cluster) runs them: it holds the scheduler's
 * leader lock (queue/coordination: `locks/scheduler.lock` with a lease and a heartbeat, or an
 * advisory lock on the node lease); the others poll to take over when the holder dies. Each tick resolves `latest` and
 * runs it through the executor every door uses, with a fresh correlation id and null input.
 */
import { randomUUID } from 'node:crypto';
import { Cron } from 'croner';
import type { Logger } from '../../common/logger.js';
import type { FlowIR } from '../../ir/types.js';
import type { LeaderLock } from '../../queue/index.js';
import type { FlowExecutor } from './flow-executor.js';

export interface ScheduledFlow {
  tenant: string;
  flow: string;
  schedule: string;
}

/** Why a `schedule:` value cannot be used, or undefined when it is a valid six-field cron. */
export function scheduleProblem(schedule: string): string | undefined {
  const fields = schedule
    .trim()
    .split(/\s+/)
    .filter((f) => f !== '');
  if (fields.length !== 6) {
    return `schedule "${schedule}" has ${fields.length} field${fields.length === 1 ? '' : 's'}; a six-field cron (seconds first, e.g. "0 */5 * * * *") is required`;
  }
  try {
    new Cron(schedule, { paused: true }).stop();
  } catch (err) {
    return `schedule "${schedule}" is not a valid cron expression: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}

/** The usable schedules among the deployed flows; each unusable one is logged with its reason. */
export function scheduledFlows(flows: readonly FlowIR[], log: Logger): ScheduledFlow[] {
  const out: ScheduledFlow[] = [];
  for (const ir of flows) {
    if (ir.schedule === undefined) continue;
    const problem = scheduleProblem(ir.schedule);
    if (problem !== undefined) log.warn(`flow ${ir.tenant}/${ir.flow} is not scheduled: ${problem}`);
    else out.push({ tenant: ir.tenant, flow: ir.flow, schedule: ir.schedule.trim() });
  }
  return out;
}

export interface SchedulerOptions {
  /** Takes the scheduler lock (Coordination.takeSchedulerLock); undefined when another holds it. */
  takeLead: (leaseMs: number) => Promise<LeaderLock | undefined>;
  /**
   * Claims one tick of one flow before it runs; false when it was run already (a cluster: the
   * node that led before a hand-over fired it). @default every tick runs
   */
  claimTick?: (f: ScheduledFlow, tickAt: string) => Promise<boolean>;
  executor: Pick<FlowExecutor, 'resolve' | 'run'>;
  log: Logger;
  /** How often a process without the lock tries to take it. Milliseconds. @default 5000 */
  pollMs?: number;
  /** Lease of the scheduler lock (a holder that stops heartbeating loses it). Milliseconds. @default 30000 */
  leaseMs?: number;
}

/** Runs the schedules while holding the scheduler lock. `stop()` releases everything. */
export class Scheduler {
  readonly #opts: SchedulerOptions;
  readonly #flows: readonly ScheduledFlow[];
  #lock: LeaderLock | undefined;
  #jobs: Cron[] = [];
  #poll: NodeJS.Timeout | undefined;
  #stopped = false;
  #trying = false;

  constructor(flows: readonly ScheduledFlow[], opts: SchedulerOptions) {
    this.#flows = flows;
    this.#opts = opts;
  }

  /** True while this process holds the lock and runs the schedules. */
  get leading(): boolean {
    return this.#lock !== undefined;
  }

  /** Tries the lock now, then every pollMs. Does nothing when no flow is scheduled. */
  async start(): Promise<void> {
    if (this.#flows.length === 0) return;
    await this.#tryLead();
    this.#poll = setInterval(() => void this.#tryLead(), this.#opts.pollMs ?? 5000);
    this.#poll.unref();
  }

  async #tryLead(): Promise<void> {
    if (this.#stopped || this.#trying) return;
    this.#trying = true;
    try {
      if (this.#lock !== undefined) {
        // Someone broke our lock (we froze past the lease): stop ticking until we win it again.
        if (await this.#lock.stillHeld()) return;
        this.#opts.log.warn('scheduler lock lost; schedules paused until it is taken again');
        this.#stopJobs();
        await this.#lock.release().catch(() => undefined);
        this.#lock = undefined;
      }
      const leaseMs = this.#opts.leaseMs ?? 30_000;
      const lock = await this.#opts.takeLead(leaseMs);
      if (lock === undefined) return;
      if (this.#stopped) {
        await lock.release();
        return;
      }
      this.#lock = lock;
      this.#opts.log.info(
        `scheduler lock taken${lock.tookOver ? ' (from a holder that stopped)' : ''}; running ${this.#flows.length} schedule(s)`,
      );
      for (const f of this.#flows) {
        this.#jobs.push(
          new Cron(f.schedule, { timezone: 'UTC', protect: true, unref: true, catch: true }, (job: Cron) =>
            this.#tick(f, job),
          ),
        );
      }
    } catch (err) {
      this.#opts.log.error({ err }, 'scheduler lock could not be taken');
    } finally {
      this.#trying = false;
    }
  }

  async #tick(f: ScheduledFlow, job: Cron): Promise<void> {
    const { executor, log } = this.#opts;
    // A holder resumed from a pause past the lease may find another process leading now: it looks
    // (on the calling thread, nothing runs in between) before every tick, and stands down.
    if (this.#lock === undefined || !this.#lock.stillHeldSync()) {
      this.#standDown();
      return;
    }
    try {
      if (this.#opts.claimTick !== undefined) {
        // The tick's own instant (whole seconds), not the time the callback got to run.
        const at = new Date(job.currentRun() ?? Date.now());
        at.setUTCMilliseconds(0);
        if (!(await this.#opts.claimTick(f, at.toISOString()))) return;
      }
      const flow = executor.resolve(f.tenant, f.flow);
      await executor.run(flow, null, { door: 'cron', correlationId: randomUUID(), headers: {} });
    } catch (err) {
      log.warn({ err }, `scheduled run of ${f.tenant}/${f.flow} failed`);
    }
  }

  /** The lock is another process's now: no more ticks here until this process wins it again (the poll keeps trying). */
  #standDown(): void {
    if (this.#lock === undefined) return;
    this.#opts.log.warn('scheduler lock lost; schedules paused until it is taken again');
    this.#stopJobs();
    const lock = this.#lock;
    this.#lock = undefined;
    void lock.release().catch(() => undefined);
  }

  #stopJobs(): void {
    for (const job of this.#jobs) job.stop();
    this.#jobs = [];
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#poll !== undefined) clearInterval(this.#poll);
    this.#stopJobs();
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release();
  }
}
