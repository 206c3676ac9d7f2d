/** Plain-text tables for listing commands: a header row, then columns padded to their widest cell. */

export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** Writes a result line (or lines) to stdout. */
export function out(text: string): void {
  process.stdout.write(`${text}\n`);
}
