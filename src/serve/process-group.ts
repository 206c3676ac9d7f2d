/**
 * `svc serve --processes <n>`: n full `svc serve` processes on one port (SO_REUSEPORT, Node 22.12
 * and later on Linux: the kernel spreads new connections over the listening sockets), sharing the
 * state directory or store as any two processes do: one worker per queue across them (each queue's
 * lock), one cron scheduler (its lock). This module keeps the group: starts each member, starts
 * another when one ends while the group runs, and stops them together.
 *
 * Why processes and not worker threads: a member is exactly the service one process runs, with
 * every guarantee tested for processes sharing a state directory; threads would share one heap
 * and one crash.
 *
 * Each member is spawned with an IPC channel it never uses for messages: when the group's process
 * ends, even by kill -9, the channel closes and the member stops itself (serve.ts), so no member
 * outlives its group.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** A member that ended is started again after this; doubled while members die young, up to the cap. Milliseconds. */
export const RESTART_DELAY_MS = 1000;
const RESTART_DELAY_CAP_MS = 30_000;
/** A member that ran at least this long before it ended counts as healthy: the delay starts over. Milliseconds. */
const HEALTHY_AFTER_MS = 10_000;

export interface ProcessGroupOptions {
  readonly count: number;
  /** The node binary and what precedes a member's own arguments (node flags, the svc script). */
  readonly execPath: string;
  readonly execArgv: readonly string[];
  /** A member's arguments, by its slot (0 to count - 1): the gRPC door is given to slot 0 only, say. */
  readonly argsFor: (slot: number) => readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** One line for the operator (stderr). */
  readonly say: (line: string) => void;
}

interface Member {
  readonly slot: number;
  child: ChildProcess | undefined;
  startedAt: number;
  delayMs: number;
  restart: NodeJS.Timeout | undefined;
}

export class ProcessGroup {
  readonly #opts: ProcessGroupOptions;
  readonly #members: Member[];
  #stopping: Promise<number> | undefined;
  /** Members started since the group began, restarts included (tests and the log read it). */
  #starts = 0;

  constructor(opts: ProcessGroupOptions) {
    this.#opts = opts;
    this.#members = Array.from({ length: opts.count }, (_, slot) => ({
      slot,
      child: undefined,
      startedAt: 0,
      delayMs: RESTART_DELAY_MS,
      restart: undefined,
    }));
  }

  start(): void {
    for (const m of this.#members) this.#spawn(m);
  }

  /** The members' process ids, in slot order (a member being restarted has none). */
  get pids(): (number | undefined)[] {
    return this.#members.map((m) => m.child?.pid);
  }

  get starts(): number {
    return this.#starts;
  }

  #spawn(m: Member): void {
    m.restart = undefined;
    const child = spawn(this.#opts.execPath, [...this.#opts.execArgv, ...this.#opts.argsFor(m.slot)], {
      env: this.#opts.env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#starts++;
    m.child = child;
    m.startedAt = Date.now();
    if (this.#starts > this.#opts.count)
      this.#opts.say(`svc serve: process ${child.pid ?? '?'} started in slot ${m.slot}`);
    // A spawn that fails (the binary missing) ends as an exit too: the same restart rule applies.
    child.on('error', (err) => this.#opts.say(`svc serve: process slot ${m.slot} could not start: ${err.message}`));
    child.on('exit', (code, signal) => this.#ended(m, child, code, signal));
  }

  #ended(m: Member, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (m.child !== child) return;
    m.child = undefined;
    if (this.#stopping !== undefined) return;
    const ranMs = Date.now() - m.startedAt;
    // The first replacement waits RESTART_DELAY_MS; each one dying young doubles the next wait.
    if (ranMs >= HEALTHY_AFTER_MS) m.delayMs = RESTART_DELAY_MS;
    const delay = m.delayMs;
    if (ranMs < HEALTHY_AFTER_MS) m.delayMs = Math.min(RESTART_DELAY_CAP_MS, m.delayMs * 2);
    const how = signal !== null ? `signal ${signal}` : `exit code ${code ?? '?'}`;
    this.#opts.say(
      `svc serve: process ${child.pid ?? '?'} (slot ${m.slot}) ended (${how}) after ${(ranMs / 1000).toFixed(1)} s; starting another in ${(delay / 1000).toFixed(0)} s`,
    );
    m.restart = setTimeout(() => this.#spawn(m), delay);
  }

  /**
   * Stops every member (SIGTERM: each finishes its requests and closes as one `svc serve` does) and
   * resolves once all have ended, with 0 when each ended cleanly, 1 otherwise. Runs once.
   */
  stop(): Promise<number> {
    this.#stopping ??= (async () => {
      const ends: Promise<boolean>[] = [];
      for (const m of this.#members) {
        if (m.restart !== undefined) clearTimeout(m.restart);
        const child = m.child;
        if (child === undefined || child.exitCode !== null || child.signalCode !== null) continue;
        ends.push(
          new Promise<boolean>((resolve) => {
            child.once('exit', (code, signal) => {
              // Said, so that a group that did not stop cleanly names which member and how.
              if (code !== 0)
                this.#opts.say(
                  `svc serve: process ${child.pid ?? '?'} (slot ${m.slot}) ended (${signal !== null ? `signal ${signal}` : `exit code ${code ?? '?'}`}) while stopping`,
                );
              resolve(code === 0);
            });
            child.kill('SIGTERM');
          }),
        );
      }
      const clean = await Promise.all(ends);
      return clean.every(Boolean) ? 0 : 1;
    })();
    return this.#stopping;
  }
}
