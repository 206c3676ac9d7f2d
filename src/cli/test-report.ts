/** How `svc test` prints: a line per example, the differences of a failure, coverage, JSON lines and JUnit XML. */
import { escapeXml } from '../common/xml.js';
import type { FlowPoint } from '../engine/index.js';
import type { ExampleResult, FlowCoverage, SuiteReport } from '../app/testing/suite.js';

/** `PASS  demo/hello  greets by name  (3 ms)`, then for a failure what differed and how the run went. */
export function resultText(r: ExampleResult): string {
  const head = `${r.verdict === 'passed' ? 'PASS' : r.verdict === 'failed' ? 'FAIL' : 'SKIP'}  ${r.flow}  ${r.name}`;
  if (r.verdict === 'skipped') return `${head}${r.note ? `  (${r.note})` : ''}`;
  const lines = [`${head}  (${r.ms < 10 ? r.ms.toFixed(1) : Math.round(r.ms)} ms)`];
  if (r.verdict === 'failed') {
    lines.push(`      at ${r.file}:${r.line}`);
    if (r.note !== undefined) lines.push(`      ${r.note}`);
    for (const m of r.mismatches)
      lines.push(
        m.what === 'stub'
          ? `      ${m.actual}`
          : m.what.startsWith('stubs.') || m.what.startsWith('masked.')
            ? `      ${m.what}: ${m.actual}`
            : `      ${m.what}: expected ${m.expected}, got ${m.actual}`,
      );
    if (r.run !== undefined) lines.push(`      ${runStory(r)}`);
  }
  return lines.join('\n');
}

/** Which steps ran, and where the run left the expected road (the failing step and why). */
function runStory(r: ExampleResult): string {
  const run = r.run!;
  const path = run.steps.length === 0 ? 'no step ran' : `steps run: ${run.steps.join(' -> ')}`;
  const attempts = run.attempts !== undefined && run.attempts > 1 ? `; ${run.attempts} deliveries` : '';
  if (run.outcome === 'completed' || run.outcome === 'filtered') return `${path} (${run.outcome}${attempts})`;
  const at = run.faultStep === undefined ? '' : ` at step '${run.faultStep}'`;
  return `${path} (${run.outcome}${at}${attempts}: ${run.error ?? ''})`;
}

export function summaryText(report: SuiteReport): string {
  const parts = [`${report.passed} passed`, `${report.failed} failed`];
  if (report.skipped > 0) parts.push(`${report.skipped} skipped`);
  return parts.join(', ');
}

export function coverageText(coverage: readonly FlowCoverage[]): string {
  const lines = ['coverage: what no example reached'];
  for (const c of coverage) {
    const reached = c.points - c.unreached.length;
    lines.push(`  ${c.flow}  ${reached}/${c.points} reached, ${c.examples} example(s)  ${c.file}`);
    for (const p of c.unreached) lines.push(`    - ${pointText(p)}`);
  }
  return lines.join('\n');
}

export function pointText(p: FlowPoint): string {
  const step = `${p.fault ? 'fault step' : 'step'} '${p.step}'`;
  if (p.point === 'entered') return `${step} never ran`;
  if (p.point.startsWith('refused:'))
    return `${step}: the rule on line ${p.point.slice(8)} never refused ("${p.rule}")`;
  const [kind, branch] = p.point.split(':') as [string, string];
  if (kind === 'condition') return `${step}: the condition was never ${branch}`;
  return `${step}: ${kind} never ran over ${branch === 'empty' ? 'an empty list' : 'items'}`;
}

/** One JSON object per example (`--json`). */
export function resultJson(r: ExampleResult): string {
  return JSON.stringify({
    file: r.file,
    line: r.line,
    flow: r.flow,
    example: r.name,
    verdict: r.verdict,
    ms: Math.round(r.ms * 10) / 10,
    mismatches: r.mismatches,
    note: r.note,
    outcome: r.run?.outcome,
    status: r.run?.status,
    steps: r.run?.steps,
    attempts: r.run?.attempts,
    error: r.run?.error,
  });
}

/** JUnit XML as CI systems read it: a testsuite per flow, a testcase per example. */
export function junitXml(report: SuiteReport): string {
  const byFlow = new Map<string, ExampleResult[]>();
  for (const r of report.results) byFlow.set(r.flow, [...(byFlow.get(r.flow) ?? []), r]);
  const secs = (ms: number) => (ms / 1000).toFixed(3);
  const total = report.results.reduce((n, r) => n + r.ms, 0);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="svc test" tests="${report.results.length}" failures="${report.failed}" errors="${report.compileErrors.length}" skipped="${report.skipped}" time="${secs(total)}">`,
  ];
  for (const [flow, results] of byFlow) {
    const failures = results.filter((r) => r.verdict === 'failed').length;
    const skipped = results.filter((r) => r.verdict === 'skipped').length;
    const time = results.reduce((n, r) => n + r.ms, 0);
    out.push(
      `  <testsuite name="${attr(flow)}" tests="${results.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${secs(time)}">`,
    );
    for (const r of results) {
      const open = `    <testcase name="${attr(r.name)}" classname="${attr(flow)}" file="${attr(r.file)}" line="${r.line}" time="${secs(r.ms)}"`;
      if (r.verdict === 'passed') out.push(`${open}/>`);
      else if (r.verdict === 'skipped')
        out.push(`${open}>`, `      <skipped message="${attr(r.note ?? '')}"/>`, '    </testcase>');
      else {
        const first =
          r.note ??
          (r.mismatches[0]
            ? `${r.mismatches[0].what}: expected ${r.mismatches[0].expected}, got ${r.mismatches[0].actual}`
            : 'failed');
        out.push(
          `${open}>`,
          `      <failure message="${attr(first)}" type="example">${escapeXml(xmlSafe(resultText(r)))}</failure>`,
          '    </testcase>',
        );
      }
    }
    out.push('  </testsuite>');
  }
  if (report.compileErrors.length > 0) {
    out.push(
      `  <testsuite name="compile" tests="${report.compileErrors.length}" failures="0" errors="${report.compileErrors.length}" skipped="0" time="0">`,
    );
    for (const e of report.compileErrors)
      out.push(
        `    <testcase name="${attr(`${e.file}:${e.line}`)}" classname="compile" file="${attr(e.file)}" line="${e.line}" time="0">`,
        `      <error message="${attr(`${e.step}: ${e.message}`)}" type="compile"/>`,
        '    </testcase>',
      );
    out.push('  </testsuite>');
  }
  out.push('</testsuites>', '');
  return out.join('\n');
}

/** An attribute value: escaped, and with no character XML 1.0 cannot carry. */
function attr(text: string): string {
  return escapeXml(xmlSafe(text)).replace(/\n/g, '&#10;');
}

/** Text with the control characters XML 1.0 cannot carry replaced by `?`. */
function xmlSafe(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '?');
}
