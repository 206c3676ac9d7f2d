/**
 * Fuzz (issue 36): the example flows, damaged the way an editor damages a file (cut short, a line
 * lost, two lines swapped, a line doubled, a few lines shuffled), never make the compiler throw,
 * and never make it report more than a few errors per damage: a fence left open or a YAML slip is
 * one error, not one per line after it. Each error is on a line of the file.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import fc from 'fast-check';
import { compileFlow } from './compile.js';

/** The most errors one damaged spot may produce (three keys needing a fourth that the damage removed, say). */
const ERRORS_PER_DAMAGE = 4;

const EXAMPLES = ['features', 'demo'].flatMap((set) => {
  const dir = new URL(`../../../examples/${set}/`, import.meta.url);
  return (
    readdirSync(dir)
      .filter((f) => f.endsWith('.flow.md'))
      .map((f) => ({ name: `${set}/${f}`, lines: readFileSync(new URL(f, dir), 'utf8').split('\n') }))
      // A flow using a library needs it given (--libs); the others stand alone.
      .filter((e) => !e.lines.some((l) => l.startsWith('use:')))
  );
});

type Damage = (lines: string[], at: number) => string[];
const DAMAGES: Record<string, Damage> = {
  cut: (l, at) => l.slice(0, at),
  lose: (l, at) => [...l.slice(0, at), ...l.slice(at + 1)],
  swap: (l, at) => {
    const out = [...l];
    if (at + 1 < out.length) [out[at], out[at + 1]] = [out[at + 1]!, out[at]!];
    return out;
  },
  double: (l, at) => [...l.slice(0, at + 1), ...l.slice(at)],
};

const verdict = (lines: string[]) => {
  const r = compileFlow(lines.join('\n'), { file: 'x.flow.md' });
  for (const d of r.diagnostics)
    assert.ok(d.line >= 1 && d.line <= lines.length + 1, `an error on line ${d.line} of ${lines.length}`);
  return r.diagnostics;
};

test('every example compiles as it is (the damage below is the only defect)', () => {
  for (const e of EXAMPLES) assert.deepEqual(verdict(e.lines), [], e.name);
});

test('every single damage (each line cut at, lost, swapped or doubled) never throws and gives at most a few errors', () => {
  // Exhaustive, not sampled: a sampled run once found a case the others had missed (a doubled first "---").
  for (const example of EXAMPLES)
    for (const [kind, damage] of Object.entries(DAMAGES))
      for (let at = 0; at < example.lines.length; at++) {
        const errors = verdict(damage(example.lines, at));
        assert.ok(
          errors.length <= ERRORS_PER_DAMAGE,
          `${kind} at line ${at + 1} of ${example.name}: ${errors.length} errors\n${errors.map((d) => `${d.line}: ${d.message}`).join('\n')}`,
        );
      }
});

test('a few lines shuffled never throw and give errors bounded by the lines moved', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...EXAMPLES),
      fc.nat(),
      fc.integer({ min: 2, max: 4 }),
      fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
      (example, n, width, keys) => {
        const at = n % example.lines.length;
        const window = example.lines.slice(at, at + width);
        const order = window.map((line, i) => ({ line, key: keys[i]! })).sort((a, b) => a.key - b.key);
        const lines = [...example.lines.slice(0, at), ...order.map((o) => o.line), ...example.lines.slice(at + width)];
        const errors = verdict(lines);
        assert.ok(
          errors.length <= ERRORS_PER_DAMAGE * window.length,
          `${window.length} lines shuffled at line ${at + 1} of ${example.name}: ${errors.length} errors\n${errors.map((d) => `${d.line}: ${d.message}`).join('\n')}`,
        );
      },
    ),
    { numRuns: 300 },
  );
});
