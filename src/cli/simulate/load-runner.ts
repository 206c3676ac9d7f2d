/** Sends `svc simulate`'s traffic: workers over keep-alive connections, closed loop or on an open-loop schedule, feeding the rotation and the stats. */
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { flowLabel, verdictFor, type Rotation, type SimTarget } from './plan.js';
import type { SimStats, StopReason } from './stats.js';

export interface LoadRunOptions {
  /** Base URL without a trailing slash. */
  readonly url: string;
  readonly durationMs: number;
  /** Requests in flight at once (one keep-alive connection each). */
  readonly connections: number;
  /** Target requests per second (open loop); undefined: each worker sends as fast as answers come (closed loop). */
  readonly rate: number | undefined;
  readonly keys: ReadonlyMap<string, string>;
  readonly rotation: Rotation;
  readonly stats: SimStats;
  /** Prefix of every X-Correlation-ID. */
  readonly runId: string;
  /** Told once per flow withdrawn by a 403 or 404 (on either route: both are withdrawn). */
  onWithdraw(target: SimTarget, status: number, message: string): void;
}

export interface LoadRun {
  /** Resolves when every worker has finished (in-flight requests are answered and counted). */
  readonly done: Promise<{ stopped: StopReason; message?: string }>;
  /** Ends the run early (Ctrl-C); the first reason given wins. */
  stop(reason: StopReason, message?: string): void;
}

/** After a request that got no answer, a worker waits this long so a dead server is not hammered. */
const ERROR_BACKOFF_MS = 100;

export function startLoad(opts: LoadRunOptions): LoadRun {
  const dispatcher = new Agent({ connections: opts.connections, keepAliveTimeout: 10_000, pipelining: 1 });
  const start = performance.now();
  const end = start + opts.durationMs;
  let reason: StopReason | undefined;
  let message: string | undefined;
  let wake: () => void = () => {};
  const stopped = new Promise<void>((res) => (wake = res));
  const stop = (r: StopReason, m?: string) => {
    if (reason !== undefined) return;
    reason = r;
    message = m;
    wake();
  };
  const endTimer = setTimeout(() => stop('duration'), opts.durationMs);
  /** Waits until `at` (performance.now() time) or the stop, whichever comes first. */
  const until = (at: number) =>
    new Promise<void>((res) => {
      const t = setTimeout(res, Math.max(0, at - performance.now()));
      void stopped.then(() => {
        clearTimeout(t);
        res();
      });
    });
  let slot = 0;
  let seq = 0;

  const worker = async () => {
    while (reason === undefined) {
      let scheduled = performance.now();
      if (opts.rate !== undefined) {
        // Open loop: slot i is due at start + i/rate whatever the answers' latency, and its latency
        // counts from then, so a slow server is not excused by the requests it held back.
        scheduled = start + (slot++ * 1000) / opts.rate;
        if (scheduled >= end) return;
        await until(scheduled);
        if (reason !== undefined) return;
      } else if (scheduled >= end) {
        return;
      }
      const target = opts.rotation.next();
      if (target === undefined) {
        stop('nothing_left');
        return;
      }
      const label = flowLabel(target);
      try {
        const res = await request(
          `${opts.url}/flows/${encodeURIComponent(target.tenant)}/${encodeURIComponent(target.flow)}/${target.route}`,
          {
            method: 'POST',
            dispatcher,
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${opts.keys.get(target.tenant) ?? ''}`,
              'x-correlation-id': `${opts.runId}-${seq++}`,
            },
            body: target.body,
          },
        );
        const text = await res.body.text();
        opts.stats.record(label, target.route, String(res.statusCode), performance.now() - scheduled);
        const verdict = verdictFor(res.statusCode);
        if (verdict === 'stop') {
          stop(
            'unauthorized',
            `401 from POST /flows/${label}/${target.route} (${errorText(text)}): the key for tenant "${target.tenant}" was refused (wrong, revoked or expired); stopping the run`,
          );
        } else if (verdict === 'withdraw') {
          if (opts.rotation.withdraw(target)) opts.onWithdraw(target, res.statusCode, errorText(text));
          if (!opts.rotation.hasTargets)
            stop(
              'nothing_left',
              'every flow was withdrawn from the rotation (403 or 404 on each); nothing is left to send',
            );
        }
      } catch (err) {
        opts.stats.record(label, target.route, 'error', performance.now() - scheduled);
        process.stderr.write(`no answer from ${opts.url} for ${label} (${target.route}): ${(err as Error).message}\n`);
        await until(performance.now() + ERROR_BACKOFF_MS);
      }
    }
  };

  const done = Promise.all(Array.from({ length: opts.connections }, worker)).then(async () => {
    clearTimeout(endTimer);
    stop('duration');
    await dispatcher.close();
    return { stopped: reason!, ...(message === undefined ? {} : { message }) };
  });
  return { done, stop };
}

/** The `error` field of a JSON error body, else the text itself (shortened). */
function errorText(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') return body.error;
  } catch {
    // Not JSON: show the text.
  }
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
