/**
 * Load whose every response is kept with the time it arrived, so the latency of a window inside
 * the run (while a retention cycle deletes, say) can be told from the rest of it. autocannon
 * drives the connections; the run lasts until stop().
 */
import autocannon from 'autocannon';

export interface TimedLoadOptions {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** @default 32 */
  readonly connections?: number;
  /** Upper bound on the run; stop() usually ends it first. Seconds. @default 120 */
  readonly maxSeconds?: number;
}

export interface TimedLoad {
  /**
   * Requests in flight at some moment of [fromMs, toMs) (performance.now() clock), so one that a
   * stall held past the window's end still counts: how many, their p99 latency, and the responses
   * that arrived inside the window per second.
   */
  window(fromMs: number, toMs: number): WindowFigures;
  /** Responses that were not 2xx so far. */
  readonly non2xx: number;
  stop(): Promise<void>;
}

export interface WindowFigures {
  /** Requests in flight during the window. */
  readonly responses: number;
  /** Responses that arrived inside the window, per second. */
  readonly reqPerSec: number;
  /** Milliseconds; NaN when the window holds no response. */
  readonly p99Ms: number;
}

export function startTimedLoad(o: TimedLoadOptions): TimedLoad {
  // Arrival time and latency per response, in growable typed arrays (millions of responses).
  let at = new Float64Array(1 << 16);
  let latency = new Float64Array(1 << 16);
  let n = 0;
  let non2xx = 0;
  const instance = autocannon(
    {
      url: o.url,
      method: 'POST',
      headers: o.headers,
      body: o.body,
      connections: o.connections ?? 32,
      duration: o.maxSeconds ?? 120,
    },
    () => undefined,
  );
  instance.on('response', (_client, status, _bytes, responseTime) => {
    if (n === at.length) {
      const grow = (a: Float64Array) => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      at = grow(at);
      latency = grow(latency);
    }
    at[n] = performance.now();
    latency[n] = responseTime;
    n++;
    if (status < 200 || status >= 300) non2xx++;
  });
  const done = new Promise<void>((resolve) => instance.on('done', () => resolve()));
  return {
    window(fromMs, toMs) {
      const picked: number[] = [];
      let arrived = 0;
      for (let i = 0; i < n; i++) {
        if (at[i]! >= fromMs && at[i]! < toMs) arrived++;
        if (at[i]! >= fromMs && at[i]! - latency[i]! < toMs) picked.push(latency[i]!);
      }
      picked.sort((a, b) => a - b);
      const p99Ms =
        picked.length === 0 ? NaN : picked[Math.min(picked.length - 1, Math.ceil(picked.length * 0.99) - 1)]!;
      return { responses: picked.length, reqPerSec: arrived / Math.max(1e-9, (toMs - fromMs) / 1000), p99Ms };
    },
    get non2xx() {
      return non2xx;
    },
    async stop() {
      instance.stop();
      await done;
    },
  };
}
