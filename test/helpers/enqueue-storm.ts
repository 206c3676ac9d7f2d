/**
 * The /enqueue storm of the full-disk tests: concurrent clients submit to tenant acme until the
 * server has refused enough of them (the disk is full), and every answer is kept by correlation id.
 */
import assert from 'node:assert/strict';

/** An HTTP status, or what became of a request that got none. */
export type Answer = number | 'timeout' | 'error';

export interface StormOptions {
  readonly clients: number;
  /** The flow most submissions go to. */
  readonly flow: string;
  /** Every `everyNth` submission of a client goes to `flow` instead. */
  readonly other: { readonly flow: string; readonly everyNth: number };
  /** The storm stops after this many 500s (or at the first answer that is neither 202 nor 500). */
  readonly stopAfter500s: number;
  /** @default 60000 */
  readonly deadlineMs?: number;
}

export class EnqueueStorm {
  /** Every submission's flow and answer, by correlation id. */
  readonly answers = new Map<string, { readonly flow: string; readonly answer: Answer }>();
  /** The distinct bodies of the 500s. */
  readonly bodiesOf500 = new Set<string>();
  readonly #base: () => string;
  readonly #key: string;
  readonly #timeoutMs: number;

  /** @param base the server's URL (a function: the server may be restarted between calls) */
  constructor(base: () => string, key: string, requestTimeoutMs = 15_000) {
    this.#base = base;
    this.#key = key;
    this.#timeoutMs = requestTimeoutMs;
  }

  /** One submission of a 1 KB message carrying `cid` (also its correlation id); its answer is recorded. */
  async send(flow: string, cid: string): Promise<Answer> {
    let answer: Answer;
    try {
      const res = await fetch(`${this.#base()}/flows/acme/${flow}/enqueue`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.#key}`, 'x-correlation-id': cid },
        body: JSON.stringify({ cid, pad: 'p'.repeat(1000) }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      const text = await res.text();
      if (res.status === 500) this.bodiesOf500.add(text);
      answer = res.status;
    } catch (err) {
      answer = (err as Error).name === 'TimeoutError' ? 'timeout' : 'error';
    }
    this.answers.set(cid, { flow, answer });
    return answer;
  }

  /** Runs the storm (ids `full-<client>-<n>`); resolves with the number of 500s. */
  async run(o: StormOptions): Promise<number> {
    let refused = 0;
    let stop = false;
    const client = async (c: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const answer = await this.send(
          i % o.other.everyNth === o.other.everyNth - 1 ? o.other.flow : o.flow,
          `full-${c}-${i}`,
        );
        if (answer === 500 && ++refused >= o.stopAfter500s) stop = true;
        if (answer !== 202 && answer !== 500) stop = true;
      }
    };
    const deadline = setTimeout(() => (stop = true), o.deadlineMs ?? 60_000);
    try {
      await Promise.all(Array.from({ length: o.clients }, (_, c) => client(c)));
    } finally {
      clearTimeout(deadline);
    }
    return refused;
  }

  /** Correlation ids answered 202 for `flow`. */
  acked(flow: string): string[] {
    return [...this.answers].filter(([, a]) => a.flow === flow && a.answer === 202).map(([cid]) => cid);
  }

  /** Correlation ids answered 500. */
  refused(): string[] {
    return [...this.answers].filter(([, a]) => a.answer === 500).map(([cid]) => cid);
  }

  /** Checks the storm's answers: each 202 or 500, at least `min500s` 500s, every 500 with `body`. */
  assertFilled(refused: number, min500s: number, body: string): void {
    const odd = [...this.answers.values()].filter((a) => a.answer !== 202 && a.answer !== 500);
    assert.deepEqual(odd, [], 'every answer is 202, or the 500 the spec gives when the queue cannot be written');
    assert.ok(refused >= min500s, `the disk filled (${refused} refusals)`);
    assert.deepEqual([...this.bodiesOf500], [body]);
  }
}
