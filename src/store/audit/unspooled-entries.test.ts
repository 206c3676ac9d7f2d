import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PACKED_WIDTH } from '../contracts/index.js';
import { UnspooledEntries } from './unspooled-entries.js';

/** `n` packed entries named by their correlation ids (`ids`), the other strings filler. */
const packed = (...ids: string[]): string[] => ids.flatMap((id) => ['acme', 'queue.message.enqueued', 't', id, '{}']);
/** The correlation ids of packed entries. */
const idsOf = (p: readonly string[]): string[] => p.filter((_, i) => i % PACKED_WIDTH === 3);

type Step =
  | { hand: string[]; at: number }
  | { chain: number; counts: number }
  | { take: { from: number; ids: string[] } }
  | { owed: number };

interface Case {
  what: string;
  steps: Step[];
}

const cases: Case[] = [
  {
    what: 'chained before any spool write: each wait ends with its chain',
    steps: [{ hand: ['a', 'b'], at: 1 }, { chain: 2, counts: 2 }, { owed: 0 }, { take: { from: 3, ids: [] } }],
  },
  {
    what: 'taken into a spool write, then chained: counted once, by the write',
    steps: [{ hand: ['a', 'b'], at: 1 }, { take: { from: 1, ids: ['a', 'b'] } }, { owed: 0 }, { chain: 2, counts: 0 }],
  },
  {
    what: 'two batches, the first chained: the second is owed from its own number',
    steps: [
      { hand: ['a', 'b'], at: 1 },
      { hand: ['c', 'd', 'e'], at: 3 },
      { chain: 2, counts: 2 },
      { take: { from: 3, ids: ['c', 'd', 'e'] } },
    ],
  },
  {
    what: 'a batch chained in part (the worker commits in slices): the rest is owed from the next number',
    steps: [
      { hand: ['a', 'b', 'c'], at: 1 },
      { chain: 1, counts: 1 },
      { owed: 2 },
      { take: { from: 2, ids: ['b', 'c'] } },
      { chain: 2, counts: 0 },
    ],
  },
  {
    what: 'taken, then more handed over: a chain across both counts only the ones not taken',
    steps: [
      { hand: ['a', 'b'], at: 1 },
      { take: { from: 1, ids: ['a', 'b'] } },
      { hand: ['c', 'd'], at: 5 },
      { chain: 3, counts: 1 },
      { take: { from: 6, ids: ['d'] } },
      { chain: 1, counts: 0 },
    ],
  },
  {
    what: 'a batch handed over while nothing is owed starts the numbers afresh (spooled batches came between)',
    steps: [{ hand: ['a'], at: 1 }, { chain: 1, counts: 1 }, { hand: ['b'], at: 9 }, { take: { from: 9, ids: ['b'] } }],
  },
  {
    what: 'nothing handed over: nothing owed, a chain of spooled entries counts none',
    steps: [{ owed: 0 }, { chain: 0, counts: 0 }],
  },
];

describe('UnspooledEntries', () => {
  for (const c of cases) {
    it(c.what, () => {
      const u = new UnspooledEntries();
      c.steps.forEach((s, k) => {
        const at = `step ${k + 1}`;
        if ('hand' in s) u.handedOver(packed(...s.hand), s.at);
        else if ('chain' in s) assert.equal(u.chained(s.chain), s.counts, `${at}: waits ended by the chain`);
        else if ('owed' in s) assert.equal(u.owedCount, s.owed, `${at}: owed`);
        else {
          const taken = u.takeOwed();
          assert.deepEqual(idsOf(taken.packed), s.take.ids, `${at}: taken`);
          if (s.take.ids.length > 0) assert.equal(taken.firstSeq, s.take.from, `${at}: first number`);
        }
      });
    });
  }

  it('matches a model of every entry over random sequences of hand-overs, chains and spool writes', () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 300; round++) {
      const u = new UnspooledEntries();
      // The model: every entry handed over, oldest first, with its number and state.
      const model: { id: string; seq: number; chained: boolean; counted: boolean }[] = [];
      // As the writer: a batch without a spool write is numbered on; one with a write takes every owed entry first.
      let seq = 0;
      let next = 0;
      for (let op = 0; op < 40; op++) {
        const r = rand(3);
        if (r === 0) {
          const ids = Array.from({ length: 1 + rand(4) }, () => `e${next++}`);
          u.handedOver(packed(...ids), seq + 1);
          for (const id of ids) model.push({ id, seq: ++seq, chained: false, counted: false });
        } else if (r === 1) {
          const unchained = model.filter((e) => !e.chained);
          const k = rand(unchained.length + 1);
          const now = unchained.slice(0, k);
          const expect = now.filter((e) => !e.counted).length;
          for (const e of now) e.chained = e.counted = true;
          assert.equal(u.chained(k), expect, `round ${round} op ${op}: chain of ${k}`);
        } else {
          const owed = model.filter((e) => !e.counted);
          const taken = u.takeOwed();
          assert.deepEqual(
            idsOf(taken.packed),
            owed.map((e) => e.id),
            `round ${round} op ${op}: taken`,
          );
          if (owed.length > 0) {
            assert.equal(taken.firstSeq, owed[0]!.seq, `round ${round} op ${op}: first number`);
            assert.deepEqual(
              owed.map((e) => e.seq),
              owed.map((_, i) => owed[0]!.seq + i),
              'the owed run without a gap',
            );
          }
          for (const e of owed) e.counted = true;
          seq += rand(3); // the spool write's own batch, numbered after the entries it took
        }
        assert.equal(u.owedCount, model.filter((e) => !e.counted).length);
      }
    }
  });
});
