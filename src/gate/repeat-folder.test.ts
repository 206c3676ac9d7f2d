import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_VARIANTS, RepeatFolder } from './repeat-folder.js';

/** One step: a record of `kind` noted at `at` ms, or a window closed. */
type Step = { note: string; at: number } | { close: true };

interface Case {
  readonly name: string;
  readonly opts?: { recordedPerWindow?: number; maxKinds?: number };
  readonly steps: readonly Step[];
  /** The verdict of each `note`, in order. */
  readonly verdicts: string;
  /** The summaries of each `close`, in order: `kind xN first..last`. */
  readonly summaries: readonly (readonly string[])[];
}

const n = (kind: string, at: number): Step => ({ note: kind, at });
const close: Step = { close: true };

const CASES: readonly Case[] = [
  {
    name: 'a single record is recorded and leaves no summary',
    steps: [n('a', 0), close],
    verdicts: 'R',
    summaries: [[]],
  },
  {
    name: 'the first five of a kind are recorded, the rest folded',
    steps: [n('a', 0), n('a', 1), n('a', 2), n('a', 3), n('a', 4), n('a', 5), n('a', 6), close],
    verdicts: 'RRRRRFF',
    summaries: [['a x2 5..6']],
  },
  {
    name: 'kinds are counted apart',
    opts: { recordedPerWindow: 1 },
    steps: [n('a', 0), n('b', 1), n('a', 2), n('b', 3), n('b', 4), close],
    verdicts: 'RRFFF',
    summaries: [['a x1 2..2', 'b x2 3..4']],
  },
  {
    name: 'a closed window starts afresh every kind that did not repeat',
    opts: { recordedPerWindow: 2 },
    steps: [n('a', 0), n('b', 1), close, n('a', 2), n('b', 3), close],
    verdicts: 'RRRR',
    summaries: [[], []],
  },
  {
    name: 'a kind still repeating when its window closes is folded from the start of the next: one summary per window',
    opts: { recordedPerWindow: 1 },
    steps: [n('a', 0), n('a', 1), close, n('a', 2), n('a', 3), close, close, n('a', 4), close],
    verdicts: 'RFFFR',
    summaries: [['a x1 1..1'], ['a x2 2..3'], [], []],
  },
  {
    name: 'past maxKinds a new kind folds into its overflow kind, recorded by summary only',
    opts: { recordedPerWindow: 1, maxKinds: 2 },
    steps: [n('a', 0), n('b', 1), n('c', 2), n('d', 3), close],
    verdicts: 'RRFF',
    summaries: [['many x2 2..3']],
  },
  {
    name: 'a kind already tracked is not pushed out by the cap',
    opts: { recordedPerWindow: 1, maxKinds: 1 },
    steps: [n('a', 0), n('b', 1), n('a', 2), close],
    verdicts: 'RFF',
    summaries: [['many x1 1..1', 'a x1 2..2']],
  },
];

describe('RepeatFolder', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const folder = new RepeatFolder<string>(c.opts);
      let verdicts = '';
      const summaries: string[][] = [];
      for (const step of c.steps) {
        if ('close' in step) {
          summaries.push(
            folder
              .closeWindow()
              .map((f) => `${f.sample} x${f.repeats} ${f.firstMs}..${f.lastMs}`)
              .sort(),
          );
        } else {
          const v = folder.note(step.note, step.note, step.at, () => ({ kind: 'many', record: 'many' }));
          verdicts += v === 'record' ? 'R' : 'F';
        }
      }
      assert.equal(verdicts, c.verdicts);
      assert.deepEqual(
        summaries,
        c.summaries.map((s) => [...s].sort()),
      );
    });
  }

  it('keeps memory bounded: a million distinct kinds leave at most maxKinds plus the overflow kinds', () => {
    const folder = new RepeatFolder<number>({ maxKinds: 100 });
    for (let i = 0; i < 1_000_000; i++) folder.note(`k${i}`, i, i, () => ({ kind: 'many', record: -1 }));
    const out = folder.closeWindow();
    assert.deepEqual(
      out.map((f) => [f.sample, f.repeats]),
      [[-1, 1_000_000 - 100]],
    );
  });
});

describe('RepeatFolder variants', () => {
  it('counts what varies within a kind, up to MAX_VARIANTS, and says when there were more', () => {
    const folder = new RepeatFolder<{ kind: string; flow: string }>({
      recordedPerWindow: 0,
      variantOf: (r) => r.flow,
    });
    const overflow = () => ({ kind: 'many', record: { kind: 'many', flow: '' } });
    for (let i = 0; i < 3; i++) folder.note('same', { kind: 'same', flow: 'orders' }, i, overflow);
    for (let i = 0; i < MAX_VARIANTS + 5; i++) folder.note('sprayed', { kind: 'sprayed', flow: `f${i}` }, i, overflow);
    const out = folder.closeWindow().sort((a, b) => a.sample.kind.localeCompare(b.sample.kind));
    assert.deepEqual(
      out.map((f) => [f.sample.kind, f.repeats, f.variants, f.moreVariants]),
      [
        // The first of each kind is recorded one by one, the rest folded.
        ['same', 2, 1, false],
        ['sprayed', MAX_VARIANTS + 4, MAX_VARIANTS, true],
      ],
    );
  });
});
