/**
 * Smoke test of `npm run bench:scale`: the built entry point runs the flows and keys parts at their
 * --quick sizes as a child process, exits 0, prints both tables with ratios, writes the Markdown and
 * leaves no scratch directory behind. No timing is asserted: the figures depend on the machine.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';

const RUN_JS = resolve(dirname(fileURLToPath(import.meta.url)), '../bench/scale/run.js');
const LIMIT_MS = 180_000;

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the entry point with TMPDIR inside `scratch`; killed by PID past the limit. */
function runScale(args: string[], scratch: string): Promise<Outcome> {
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: scratch };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, [RUN_JS, ...args], { cwd: scratch, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.pid !== undefined && process.kill(child.pid, 'SIGKILL'), LIMIT_MS);
  return new Promise((resolveOutcome) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolveOutcome({ code, stdout, stderr });
    }),
  );
}

describe('npm run bench:scale', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'svc-test-scale-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it(
    '--quick --only flows,keys exits 0, prints both tables with ratios to the smallest size, writes the Markdown and removes its scratch directories',
    { timeout: LIMIT_MS + 10_000 },
    async () => {
      const markdown = join(scratch, 'scale.md');
      const r = await runScale(['--quick', '--only', 'flows,keys', '--markdown', markdown], scratch);
      assert.equal(r.code, 0, `stderr:\n${r.stderr}\nstdout:\n${r.stdout}`);
      assert.match(r.stdout, /^== Flows \(/m);
      assert.match(r.stdout, /^== Keys and tenants \(/m);
      assert.match(r.stdout, /\/run throughput .*req\/s \(1\.00x\)/);
      assert.match(r.stdout, /start-up until \/health answers .* ms \(1\.00x\)/);
      assert.match(r.stdout, /unknown key, 401 throughput .*req\/s \(1\.00x\)/);
      assert.doesNotMatch(r.stdout, /failed:|WARNING/);
      assert.match(r.stderr, /\[flows .*\] seeded/);
      const md = readFileSync(markdown, 'utf8');
      assert.match(md, /^### Flows$/m);
      assert.match(md, /^### Keys and tenants$/m);
      assert.match(md, /^\| Figure \| 1 flow \| 20 flows \| Target \|$/m);
      const leftovers = readdirSync(scratch).filter((n) => n.startsWith('svc-scale-'));
      assert.deepEqual(leftovers, []);
    },
  );

  it('refuses an unknown part name with exit status 2 and the list of parts', async () => {
    const r = await runScale(['--only', 'flows,nope'], scratch);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /flows, keys, queue, logs, audit; got nope/);
    assert.equal(r.stdout, '');
  });
});
