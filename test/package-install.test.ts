/**
 * Black-box (issue 35, installed like a product): the package as a user gets it. A copy of this
 * checkout's sources is packed with `npm pack` (its `prepack` builds what ships), the tarball is
 * installed with `npm install -g` into a fresh prefix with a fresh HOME, and the installed `svc` is
 * run from a directory that holds no checkout: `--version`, `--help`, `seed`, `serve`, `simulate`
 * against it, a UI login, `deploy` of a flow file in that directory and a /run of it.
 *
 * The installed `svc` is started by its shebang (`#!/usr/bin/env node`) with this checkout's
 * `node_modules/.bin` taken off PATH, so on these machines it finds the system's Node 20 and must
 * move to the Node 24 build installed beside it (src/main.ts), as it would for a user.
 *
 * npm reads the real npm cache (filled by the checkout's `npm ci`), so the install fetches from the
 * registry only what the cache lacks. Runs once: the PostgreSQL pass skips it (nothing here reads a store URL).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startCli, type CliChild } from './helpers/cli-child.js';
import { makeSandbox, onlyOn, type Sandbox } from './helpers/svc.js';
import { uiLogin } from './helpers/ui-login.js';

/** The checkout (this file runs from dist/test/). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** What `npm pack` needs of the checkout: package.json, its `files`, and what `prepack` builds from. */
const PACKED_FROM = [
  'package.json',
  'README.md',
  'tsconfig.json',
  'tsconfig.package.json',
  'src',
  'scripts',
  'examples',
  'docs',
  'deploy',
];
/** Each npm and svc command's time limit: an install from a warm cache takes about 15 s here. */
const STEP_MS = 180_000;

/** The environment of a user's shell: HOME and the global prefix fresh, no npm script's variables, the checkout's Node off PATH. */
function userEnv(home: string, prefix: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^npm_/i.test(k) && k !== 'NODE_TEST_CONTEXT' && k !== 'SVC_TEST_STORE' && k !== 'SVC_STORE_URL') env[k] = v;
  const ownBin = join(ROOT, 'node_modules', '.bin');
  let path = (process.env.PATH ?? '').split(delimiter).filter((p) => p !== '' && resolve(p) !== ownBin);
  // A machine whose only Node is the checkout's keeps it (then svc needs no move to another Node).
  const hasNode = spawnSync('node', ['--version'], { env: { PATH: path.join(delimiter) } }).status === 0;
  if (!hasNode) path = [...path, dirname(process.execPath)];
  return {
    ...env,
    HOME: home,
    PATH: [join(prefix, 'bin'), ...path].join(delimiter),
    // The cache the checkout's install filled (on a fresh machine, by npm ci): no second download.
    npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? homedir(), '.npm'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    RUST_LOG: 'warn',
  };
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Run {
  const r = spawnSync(file, args, { cwd, env, encoding: 'utf8', timeout: STEP_MS });
  return {
    code: r.status,
    stdout: r.stdout ?? '',
    stderr: `${r.stderr ?? ''}${r.error ? `\n${r.error.message}` : ''}`,
  };
}

function must(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): string {
  const r = run(file, args, cwd, env);
  assert.equal(r.code, 0, `${file} ${args.join(' ')} exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r.stdout;
}

describe(
  'the package, installed with npm install -g and run from outside the checkout',
  { skip: onlyOn('sqlite', 'it reads no store') },
  () => {
    let sandbox: Sandbox;
    let work: string;
    let env: NodeJS.ProcessEnv;
    let svc: string;
    let tarballFiles: string[] = [];
    let server: CliChild | undefined;
    let url = '';
    let key = '';
    let password = '';

    before(() => {
      sandbox = makeSandbox();
      const src = join(sandbox.home, 'src');
      const packs = join(sandbox.home, 'packs');
      const prefix = join(sandbox.home, 'prefix');
      const home = join(sandbox.home, 'home');
      work = join(sandbox.home, 'work');
      for (const d of [src, packs, prefix, home, work]) mkdirSync(d, { recursive: true });
      for (const part of PACKED_FROM) cpSync(join(ROOT, part), join(src, part), { recursive: true });
      // prepack's compiler, from the checkout's install.
      symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'), 'dir');
      env = userEnv(home, prefix);
      // npm pack runs prepack, which builds dist/ in the copy; the checkout's own dist/ is not read.
      must('npm', ['pack', '--pack-destination', packs], src, {
        ...env,
        PATH: `${join(ROOT, 'node_modules', '.bin')}${delimiter}${env.PATH}`,
      });
      const tarball = join(
        packs,
        readdirSync(packs).find((f) => f.endsWith('.tgz'))!,
      );
      tarballFiles = must('tar', ['tzf', tarball], packs, env).split('\n').filter(Boolean);
      must('npm', ['install', '-g', '--prefer-offline', '--prefix', prefix, tarball], work, env);
      svc = join(prefix, 'bin', 'svc');
    });

    after(async () => {
      await server?.stop();
      sandbox.cleanup();
    });

    it('ships what runs and what a user reads, built by prepack, and no tests or sources', () => {
      const has = (path: string) => tarballFiles.includes(`package/${path}`);
      for (const path of [
        'package.json',
        'README.md',
        'dist/src/main.js',
        'dist/src/cli/index.js',
        'dist/src/store/pg/migrations/0001_initial.sql',
        'examples/demo/hello.flow.md',
        'examples/demo/hello.sample.json',
        'docs/operations.md',
        'docs/running-for-real.md',
        'deploy/svc.service',
        'scripts/check-native.mjs',
      ])
        assert.ok(has(path), `${path} is in the package`);
      const stray = tarballFiles.filter(
        (f) => /\.test\.js$|\.ts$|\.map$/.test(f) || /^package\/(dist\/(test|bench)|test|bench|src)\//.test(f),
      );
      assert.deepEqual(stray, [], 'no test, bench, TypeScript source or source map is shipped');
    });

    it('svc --version and svc --help answer from any directory, on Node 24', () => {
      const version = must(svc, ['--version'], work, env);
      assert.match(version, /^svc \d+\.\d+\.\d+ \(Node v2[4-9]\.\d+\.\d+\)\n$/);
      const help = must(svc, ['--help'], work, env);
      for (const command of ['serve', 'deploy', 'seed', 'simulate', 'settings', 'audit'])
        assert.match(help, new RegExp(`^  ${command}\\b`, 'm'));
      const typo = run(svc, ['deplyo'], work, env);
      assert.equal(typo.code, 1);
      assert.match(typo.stderr, /Did you mean deploy\?/);
      assert.ok(typo.stderr.trim().split('\n').length <= 3, `a short hint, not the whole help:\n${typo.stderr}`);
    });

    it('svc seed, without --demo-dir and with no ./examples/demo, seeds the demo set installed with svc into ~/.svc', () => {
      assert.equal(existsSync(join(work, 'examples')), false);
      const out = must(svc, ['seed'], work, env);
      assert.match(
        out,
        /^reading the demo flows in .*\/lib\/node_modules\/svc-flow-service\/examples\/demo \(installed with svc\)$/m,
      );
      assert.match(out, /run demo\/hello: 200/);
      key = /API key of demo: (svk_[0-9a-f]{32})/.exec(out)![1]!;
      password = /UI user demo-sysadmin \(sysadmin\): password (\S+)/.exec(out)![1]!;
      assert.ok(existsSync(join(env.HOME!, '.svc', 'registry.db')), 'the state is in ~/.svc');
    });

    it('svc serve starts on the default state directory and names every database it uses', async () => {
      server = startCli(sandbox, ['serve', '--port', '0'], { program: svc, cwd: work, env });
      url = (
        await server.waitForOutput(
          'stdout',
          /svc listening on http:\/\/0\.0\.0\.0:\d+ \(every interface; on this machine (http:\/\/127\.0\.0\.1:\d+)\)/,
          30_000,
        )
      )[1]!;
      for (const [label, file] of [
        ['registry', 'registry.db'],
        ['ui db', 'ui.db'],
        ['audit', 'audit.db'],
        ['log', 'log.db'],
      ])
        assert.ok(
          server.stdout().includes(`  ${`${label}:`.padEnd(11)} ${join(env.HOME!, '.svc', file)}\n`),
          `the boot output names ${file}:\n${server.stdout()}`,
        );
    });

    it('svc simulate, with no directory, sends traffic to the seeded flows and sums it up', () => {
      const r = run(
        svc,
        ['simulate', '--url', url, '--duration', '2', '--api-key', `demo=${key}`, '--json'],
        work,
        env,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /demo flows: .*examples\/demo \(installed with svc\)/);
      const summary = JSON.parse(r.stdout) as {
        withdrawn: unknown[];
        total: { run: number; enqueue: number; statuses: Record<string, number> };
      };
      assert.ok(summary.total.run > 0 && summary.total.enqueue > 0, r.stdout);
      assert.deepEqual(summary.withdrawn, []);
      assert.ok(
        Object.keys(summary.total.statuses).every((status) => status === '200' || status === '202'),
        `every request answered 200 (/run) or 202 (/enqueue): ${JSON.stringify(summary.total.statuses)}`,
      );
    });

    it('the UI logs in with the password seed printed', async () => {
      const cookie = await uiLogin(url, 'demo-sysadmin', password);
      const page = await fetch(`${url}/ui`, { headers: { cookie } });
      assert.equal(page.status, 200);
      assert.match(await page.text(), /demo-sysadmin/);
    });

    it('svc deploy publishes a flow file of the working directory, and the running server runs it', async () => {
      writeFileSync(
        join(work, 'greet.flow.md'),
        '---\nflowdoc_version: "0.1"\nflow: greet\ntenant: demo\n---\n\n# Greet\n\n## Step: answer\n```ntd\n{"hi": "{{ ctx.input.name }}"}\n```\n',
      );
      const out = must(svc, ['deploy', 'greet.flow.md', '-v', '1.0.0'], work, env);
      assert.match(out, /greet/);
      const res = await fetch(`${url}/flows/demo/greet/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{"name":"Ada"}',
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { hi: 'Ada' });
    });

    it('stops on SIGTERM with exit 0, through the Node it moved to', async () => {
      assert.equal(await server!.stop('SIGTERM'), 0);
      server = undefined;
    });
  },
);
