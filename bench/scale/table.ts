/**
 * Prints the scale benchmark's sections: each figure at every size with its ratio to the smallest
 * size measured in the same run (`12,040 req/s (1.00x)`), the figure's target under it, and the
 * section's notes. The same tables as Markdown keep docs/performance.md current.
 */
import type { ScaleFigure, ScaleSection } from './types.js';

/** A part's outcome: its section, or why it failed (the run goes on with the next part). */
export type PartOutcome =
  | { readonly part: string; readonly section: ScaleSection; readonly seconds: number }
  | { readonly part: string; readonly error: string; readonly seconds: number };

/** The unit said in the figure's name, `... (req/s)` -> `req/s`; none when the name ends otherwise. */
export function unitOf(name: string): string {
  return /\(([^()]+)\)\s*$/.exec(name)?.[1] ?? '';
}

/** The figure's name without its trailing unit. */
function bareName(name: string): string {
  return name.replace(/\s*\([^()]+\)\s*$/, '');
}

/** Three significant figures at most, thousands separated: 12,040 / 312 / 45.6 / 1.23. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return '-';
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** The ratio of each value to the first one measured (the smallest size); NaN where either is missing. */
export function ratios(values: readonly number[]): number[] {
  const base = values.find((v) => Number.isFinite(v));
  return values.map((v) => (base === undefined || base === 0 || !Number.isFinite(v) ? Number.NaN : v / base));
}

/** `12,040 req/s (1.00x)`; `-` where not measured. */
export function cell(value: number, ratio: number, unit: string): string {
  if (!Number.isFinite(value)) return '-';
  const shown = unit === '' ? formatNumber(value) : `${formatNumber(value)} ${unit}`;
  return Number.isFinite(ratio) ? `${shown} (${ratio.toFixed(2)}x)` : shown;
}

function cells(f: ScaleFigure): string[] {
  const unit = unitOf(f.name);
  const r = ratios(f.values);
  return f.values.map((v, i) => cell(v, r[i]!, unit));
}

/** The sections as plain-text tables, for stdout. */
export function textTables(outcomes: readonly PartOutcome[]): string {
  const out: string[] = [];
  for (const o of outcomes) {
    if ('error' in o) {
      out.push(`== ${o.part}: failed: ${o.error}`, '');
      continue;
    }
    const s = o.section;
    out.push(`== ${s.title} (${o.seconds.toFixed(0)} s)`);
    const rows = s.figures.map((f) => [
      `${bareName(f.name)}${f.higherIsBetter ? ' (higher is better)' : ''}`,
      ...cells(f),
    ]);
    const header = ['', ...s.sizes.map((z) => z.label)];
    const widths = header.map((h, col) => Math.max(h.length, ...rows.map((r) => (r[col] ?? '').length)));
    const line = (r: readonly string[]) =>
      r
        .map((c, col) => (col === 0 ? c.padEnd(widths[col]!) : c.padStart(widths[col]!)))
        .join('   ')
        .trimEnd();
    out.push(line(header));
    s.figures.forEach((f, i) => {
      out.push(line(rows[i]!));
      if (f.target !== undefined) out.push(`    target: ${f.target}`);
    });
    for (const n of s.notes ?? []) out.push(`  - ${n}`);
    out.push('');
  }
  return out.join('\n');
}

const escape = (text: string) => text.replaceAll('|', '\\|');

/** The same tables as Markdown: one `###` heading, table and notes per section. */
export function markdownTables(outcomes: readonly PartOutcome[]): string {
  const out: string[] = [];
  for (const o of outcomes) {
    if ('error' in o) {
      out.push(`### ${o.part}`, '', `Failed: ${escape(o.error)}`, '');
      continue;
    }
    const s = o.section;
    out.push(`### ${s.title}`, '');
    out.push(`| Figure | ${s.sizes.map((z) => escape(z.label)).join(' | ')} | Target |`);
    out.push(`|---|${s.sizes.map(() => '---:').join('|')}|---|`);
    for (const f of s.figures)
      out.push(`| ${escape(f.name)} | ${cells(f).map(escape).join(' | ')} | ${escape(f.target ?? '')} |`);
    if ((s.notes ?? []).length > 0) out.push('', ...(s.notes ?? []).map((n) => `- ${n}`));
    out.push('');
  }
  return out.join('\n');
}
