/**
 * Time charts as SVG documents, drawn on the server with presentation attributes only (no style
 * element, no script: they show under the UI's Content-Security-Policy), every text escaped: bars
 * for counts, lines for times, a sparkline for a table cell. Each series carries its values in a
 * `data-values` attribute, so a reader (or a test) can check what was drawn against the rollups.
 */
import { escapeXml } from '../../common/xml.js';

export interface ChartSeries {
  readonly name: string;
  readonly colour: string;
  /** One value per period; null where nothing was measured (a gap in a line). */
  readonly values: ReadonlyArray<number | null>;
}

export interface TimeChart {
  readonly title: string;
  /** The periods' start times, epoch milliseconds, oldest first (as many as each series has values). */
  readonly times: readonly number[];
  /** `bars` (counts, side by side per period) or `lines` (times). */
  readonly kind: 'bars' | 'lines';
  readonly series: readonly ChartSeries[];
  /** Written after each y-axis number: `ms`, or nothing for counts. */
  readonly unit?: string;
  /** Label the x axis by `HH:MM` (minutes) or `DD HH:00` (hours). */
  readonly per: 'minute' | 'hour';
}

const FONT = 'system-ui, -apple-system, Segoe UI, sans-serif';
const INK = '#1d2330';
const MUTED = '#5b6475';
const GRID = '#e3e6ec';
const W = 560;
const H = 200;
const LEFT = 48;
const RIGHT = 12;
const TOP = 44;
const BOTTOM = 24;

const e = escapeXml;
const r1 = (v: number): string => String(Math.round(v * 10) / 10);

/** A round axis maximum at or above `max`: 1, 2 or 5 times a power of ten. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

function axisNumber(v: number, unit: string | undefined): string {
  const text = v >= 10_000 ? `${r1(v / 1000)}k` : Number.isInteger(v) ? String(v) : r1(v);
  return unit === undefined ? text : `${text} ${unit}`;
}

function timeLabel(ms: number, per: 'minute' | 'hour'): string {
  const iso = new Date(ms).toISOString();
  return per === 'minute' ? iso.slice(11, 16) : `${iso.slice(8, 10)} ${iso.slice(11, 13)}:00`;
}

/** A chart of one window: y axis with three ticks, x axis with five time labels (UTC), a legend, the series. */
export function timeChartSvg(chart: TimeChart): string {
  const n = chart.times.length;
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const all = chart.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const max = niceMax(Math.max(0, ...all));
  const y = (v: number): number => TOP + plotH - (v / max) * plotH;
  const slot = n === 0 ? plotW : plotW / n;
  const x = (i: number): number => LEFT + slot * i + slot / 2;
  let out =
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${e(chart.title)}" font-family="${FONT}" font-size="11" fill="${INK}">` +
    `<title>${e(chart.title)}</title>` +
    `<text x="${LEFT}" y="14" font-size="12" font-weight="600">${e(chart.title)}</text>`;
  // Legend on its own line under the title.
  let lx = LEFT;
  for (const s of chart.series) {
    out += `<rect x="${r1(lx)}" y="22" width="10" height="10" fill="${e(s.colour)}"/><text x="${r1(lx + 14)}" y="31" fill="${MUTED}">${e(s.name)}</text>`;
    lx += s.name.length * 6.3 + 26;
  }
  out += `<text x="${W - RIGHT}" y="31" text-anchor="end" fill="${MUTED}">UTC, per ${chart.per}</text>`;
  // Counts keep whole numbers on their axis: no middle tick at 2.5.
  const ticks = chart.unit === undefined && !Number.isInteger(max / 2) ? [0, max] : [0, max / 2, max];
  for (const v of ticks) {
    out += `<line x1="${LEFT}" x2="${W - RIGHT}" y1="${r1(y(v))}" y2="${r1(y(v))}" stroke="${GRID}"/>`;
    out += `<text class="y-tick" x="${LEFT - 4}" y="${r1(y(v) + 4)}" text-anchor="end" fill="${MUTED}">${e(axisNumber(v, chart.unit))}</text>`;
  }
  const labels = n <= 1 ? [0] : [0, 1, 2, 3, 4].map((k) => Math.round((k * (n - 1)) / 4));
  for (const i of new Set(labels)) {
    if (i >= n) continue;
    // The first and last labels keep inside the drawing.
    const anchor = n > 1 && i === 0 ? 'start' : n > 1 && i === n - 1 ? 'end' : 'middle';
    const at = anchor === 'start' ? LEFT : anchor === 'end' ? W - RIGHT : x(i);
    out += `<text class="x-tick" x="${r1(at)}" y="${H - BOTTOM + 16}" text-anchor="${anchor}" fill="${MUTED}">${e(timeLabel(chart.times[i]!, chart.per))}</text>`;
  }
  const k = chart.series.length;
  chart.series.forEach((s, si) => {
    const values = s.values.map((v) => (v === null ? '' : r1(v))).join(',');
    out += `<g class="series" data-series="${e(s.name)}" data-values="${values}">`;
    if (chart.kind === 'bars') {
      const bw = Math.max(1, (slot * 0.8) / k);
      s.values.forEach((v, i) => {
        if (v === null || v === 0) return;
        const bx = LEFT + slot * i + slot * 0.1 + bw * si;
        out += `<rect x="${r1(bx)}" y="${r1(y(v))}" width="${r1(bw)}" height="${r1(TOP + plotH - y(v))}" fill="${e(s.colour)}"><title>${e(`${timeLabel(chart.times[i]!, chart.per)} ${s.name}: ${v}`)}</title></rect>`;
      });
    } else {
      // A line through the measured points; a gap where a period measured nothing.
      let d = '';
      let pen = false;
      s.values.forEach((v, i) => {
        if (v === null) {
          pen = false;
          return;
        }
        d += `${pen ? 'L' : 'M'}${r1(x(i))},${r1(y(v))} `;
        pen = true;
      });
      if (d !== '') out += `<path d="${d.trim()}" fill="none" stroke="${e(s.colour)}" stroke-width="1.6"/>`;
      // A dot where a value stands out: above zero, or alone between gaps (a line would not show it).
      s.values.forEach((v, i) => {
        const alone = (s.values[i - 1] ?? null) === null && (s.values[i + 1] ?? null) === null;
        if (v !== null && (v !== 0 || alone))
          out += `<circle cx="${r1(x(i))}" cy="${r1(y(v))}" r="2" fill="${e(s.colour)}"><title>${e(`${timeLabel(chart.times[i]!, chart.per)} ${s.name}: ${r1(v)}${chart.unit ? ` ${chart.unit}` : ''}`)}</title></circle>`;
      });
    }
    out += '</g>';
  });
  return `${out}</svg>`;
}

/** A sparkline of counts for a table cell: 120 by 24, no axes; its values in `data-values`. */
export function sparklineSvg(values: readonly number[], label: string): string {
  const w = 120;
  const h = 24;
  const max = Math.max(1, ...values);
  const step = values.length <= 1 ? w : w / (values.length - 1);
  const points = values.map((v, i) => `${r1(i * step)},${r1(h - 2 - (v / max) * (h - 4))}`).join(' ');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="sparkline" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${e(label)}">` +
    `<title>${e(label)}</title><polyline data-values="${values.join(',')}" points="${points}" fill="none" stroke="#3b6fd1" stroke-width="1.4"/></svg>`
  );
}
