/**
 * The certificate registry through the real `svc` (certificates made by openssl here): add and its
 * refusals, list and --expiring-in, replace and show, reconcile's verdicts, and the expiry sweep of
 * two servers sharing one state directory.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { corruptArtifact, createTenant, deployFlow, flow, setTenantEnabled } from './helpers/registry-setup.js';
import { storedText } from './helpers/store-sql.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

describe('svc cert', () => {
  const sandbox = makeSandbox();
  const file = (name: string) => join(sandbox.home, name);
  /** A self-signed certificate valid `days` days, and its key, written beside each other. */
  const makeCert = (name: string, days: number) => {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        file(`${name}.key`),
        '-out',
        file(`${name}.pem`),
        '-days',
        String(days),
        '-subj',
        `/CN=${name}.example`,
      ],
      { stdio: 'ignore' },
    );
    return file(`${name}.pem`);
  };
  /** A certificate that expired in 2020, signed by `openssl ca`, which takes explicit dates. */
  const makeExpired = (name: string) => {
    const dir = file(`${name}-ca`);
    execFileSync('mkdir', ['-p', dir]);
    writeFileSync(join(dir, 'index.txt'), '');
    writeFileSync(join(dir, 'serial'), '01\n');
    writeFileSync(
      join(dir, 'ca.cnf'),
      `[ ca ]\ndefault_ca = d\n[ d ]\ndir = ${dir}\ndatabase = ${dir}/index.txt\nserial = ${dir}/serial\nnew_certs_dir = ${dir}\ndefault_md = sha256\npolicy = p\n[ p ]\ncommonName = supplied\n`,
    );
    execFileSync(
      'openssl',
      [
        'req',
        '-new',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'r.csr'),
        '-subj',
        `/CN=${name}.example`,
      ],
      { stdio: 'ignore' },
    );
    execFileSync(
      'openssl',
      [
        'ca',
        '-batch',
        '-notext',
        '-config',
        join(dir, 'ca.cnf'),
        '-selfsign',
        '-keyfile',
        join(dir, 'k.pem'),
        '-in',
        join(dir, 'r.csr'),
        '-out',
        file(`${name}.pem`),
        '-startdate',
        '20200101000000Z',
        '-enddate',
        '20200201000000Z',
      ],
      { stdio: 'ignore' },
    );
    return file(`${name}.pem`);
  };
  const cert = (...args: string[]) => svc(sandbox, ['cert', ...args, '--db', sandbox.db]);
  /** Everything the sandbox's state holds, by where: each file of the state directory, or the store's rows. */
  const storedState = (): [string, string][] => {
    if (sandbox.store !== undefined) return [['the store', storedText(sandbox)]];
    const stateDir = join(sandbox.home, 'state');
    const files = (readdirSync(stateDir, { recursive: true }) as string[]).filter((f) =>
      statSync(join(stateDir, f)).isFile(),
    );
    return files.map((f) => [f, readFileSync(join(stateDir, f), 'latin1')]);
  };
  const fingerprint = (pem: string) =>
    execFileSync('openssl', ['x509', '-in', pem, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' })
      .trim()
      .split('=')[1];

  before(() => {
    createTenant(sandbox, 'acme');
    createTenant(sandbox, 'sleepy');
    setTenantEnabled(sandbox, 'sleepy', false);
    makeCert('soon', 5);
    makeCert('later', 365);
    makeCert('spare', 200);
    makeCert('stray', 100);
  });
  after(() => sandbox.cleanup());

  it('add records the certificate with the fingerprint openssl prints, and audits it', () => {
    const r = cert('add', file('soon.pem'), '--tenant', 'acme', '--name', 'partner');
    assert.equal(r.code, 0, r.stderr);
    const shown = JSON.parse(cert('show', '--tenant', 'acme', '--name', 'partner', '--json').stdout) as Record<
      string,
      unknown
    >[];
    assert.equal(shown.length, 1);
    assert.equal(shown[0]!.sha256, fingerprint(file('soon.pem')));
    assert.equal(shown[0]!.kind, 'client_cert');
    assert.equal(shown[0]!.subject, 'CN=soon.example');
    assert.match(String(shown[0]!.status), /^expires in [45] days$/);
    assert.match(svc(sandbox, ['audit', '--tenant', 'acme', '--db', sandbox.db]).stdout, /cert\.added/);
    assert.equal(cert('add', file('later.pem'), '--tenant', 'acme', '--name', 'bank', '--kind', 'ca_cert').code, 0);
  });

  it('refuses a private key (plain or encrypted), a chain, a non-certificate, a bad or inactive tenant, a bad name and a duplicate, storing nothing', () => {
    writeFileSync(
      file('with-key.pem'),
      readFileSync(file('soon.pem'), 'utf8') + readFileSync(file('soon.key'), 'utf8'),
    );
    execFileSync(
      'openssl',
      ['genpkey', '-algorithm', 'RSA', '-aes256', '-pass', 'pass:secret', '-out', file('encrypted.key')],
      { stdio: 'ignore' },
    );
    writeFileSync(file('chain.pem'), readFileSync(file('soon.pem'), 'utf8') + readFileSync(file('later.pem'), 'utf8'));
    writeFileSync(file('text.pem'), 'hello, not a certificate\n');
    const cases: [string[], RegExp][] = [
      [[file('with-key.pem'), '--tenant', 'acme', '--name', 'x'], /private key/],
      [[file('soon.key'), '--tenant', 'acme', '--name', 'x'], /private key/],
      [[file('encrypted.key'), '--tenant', 'acme', '--name', 'x'], /private key/],
      [[file('chain.pem'), '--tenant', 'acme', '--name', 'x'], /chain of 2 certificates/],
      [[file('text.pem'), '--tenant', 'acme', '--name', 'x'], /no PEM certificate/],
      [[file('spare.pem'), '--tenant', 'nobody', '--name', 'x'], /not registered.*svc tenant create/],
      [[file('spare.pem'), '--tenant', 'sleepy', '--name', 'x'], /disabled.*svc tenant enable/],
      [[file('spare.pem'), '--tenant', 'acme', '--name', 'Bad Name'], /name/],
      [[file('spare.pem'), '--tenant', 'acme', '--name', 'partner'], /already exists.*svc cert replace/],
    ];
    for (const [args, why] of cases) {
      const r = cert('add', ...args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, why, args.join(' '));
    }
    assert.equal(
      (JSON.parse(cert('list', '--tenant', 'acme', '--json').stdout) as unknown[]).length,
      2,
      'nothing was stored',
    );
    // No byte of either private key anywhere in the state directory, or in the store's rows.
    const keyBodies = ['soon.key', 'encrypted.key'].map((k) => readFileSync(file(k), 'utf8').split('\n')[3]!);
    for (const [where, bytes] of storedState()) {
      // The store's text is its rows: they hold the certificates' tenant, so the look is not at nothing.
      if (where === 'the store') assert.match(bytes, /soon/);
      for (const body of keyBodies) assert.ok(!bytes.includes(body), `${where} holds private key material`);
    }
  });

  it('lists by soonest expiry; --expiring-in keeps those expiring within the days', () => {
    const all = JSON.parse(cert('list', '--tenant', 'acme', '--json').stdout) as { name: string; status: string }[];
    assert.deepEqual(
      all.map((c) => [c.name, c.status]),
      [
        ['partner', all[0]!.status],
        ['bank', 'valid'],
      ],
    );
    const soon = JSON.parse(cert('list', '--tenant', 'acme', '--expiring-in', '30', '--json').stdout) as {
      name: string;
    }[];
    assert.deepEqual(
      soon.map((c) => c.name),
      ['partner'],
    );
    assert.match(cert('list', '--tenant', 'acme').stdout, /partner\s+client_cert\s+expires in \d days/);
  });

  it('replace keeps the old entry as replaced; show lists the current one, then the retired, newest first', () => {
    const r = cert('replace', file('spare.pem'), '--tenant', 'acme', '--name', 'partner');
    assert.equal(r.code, 0, r.stderr);
    const shown = JSON.parse(cert('show', '--tenant', 'acme', '--name', 'partner', '--json').stdout) as {
      status: string;
      sha256: string;
    }[];
    assert.deepEqual(
      shown.map((c) => c.status),
      ['valid', 'replaced'],
    );
    assert.equal(shown[0]!.sha256, fingerprint(file('spare.pem')));
    assert.equal(shown[1]!.sha256, fingerprint(file('soon.pem')));
    assert.match(svc(sandbox, ['audit', '--tenant', 'acme', '--db', sandbox.db]).stdout, /cert\.replaced/);
    const missing = cert('replace', file('spare.pem'), '--tenant', 'acme', '--name', 'ghost');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /does not exist; register it with svc cert add/);
  });

  it('reconcile reports each path and each certificate, says paths are local, and exits 1 unless all is in order', () => {
    const tlsFlow = (name: string, certPath: string) =>
      flow(
        'acme',
        name,
        'effects: [http_egress]',
        `## Step: call\neffects: [http_egress]\nendpoint: https://127.0.0.1:1/x\ntls_client_cert: ${certPath}\ntls_client_key: ${file('spare.key')}\n`,
      );
    deployFlow(sandbox, tlsFlow('uses-partner', file('spare.pem')));
    deployFlow(sandbox, tlsFlow('uses-stray', file('stray.pem')));
    deployFlow(sandbox, tlsFlow('uses-missing', file('missing.pem')));
    deployFlow(sandbox, tlsFlow('broken', file('spare.pem')));
    corruptArtifact(sandbox, 'acme', 'broken');
    const r = cert('reconcile', '--json');
    assert.equal(r.code, 1, r.stderr);
    const findings = JSON.parse(r.stdout) as { verdict: string; where?: string; certificate?: string }[];
    const verdict = (pred: (f: (typeof findings)[number]) => boolean) => findings.filter(pred).map((f) => f.verdict);
    assert.deepEqual(
      verdict((f) => f.where?.startsWith('uses-partner') === true),
      ['registered and in use'],
    );
    assert.deepEqual(
      verdict((f) => f.where?.startsWith('uses-stray') === true),
      ['NOT REGISTERED'],
    );
    assert.deepEqual(
      verdict((f) => f.where?.startsWith('uses-missing') === true),
      ['UNREADABLE'],
    );
    assert.deepEqual(
      verdict((f) => f.where === 'broken'),
      ['could not be scanned'],
    );
    assert.deepEqual(
      verdict((f) => f.certificate === 'bank'),
      ['REGISTERED BUT NOT REFERENCED'],
    );
    assert.match(cert('reconcile').stdout, /resolved on this node/);
  });

  describe('the expiry sweep', () => {
    const servers: ServerProcess[] = [];
    after(async () => {
      for (const s of servers) await s.stop();
    });

    /** The event log's rows of one kind, through svc logs (log.db of the state directory, or the store). */
    const eventRows = (event: string) => {
      const r = svc(sandbox, ['logs', '--event', event, '--json', '--db', sandbox.db]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { tenant: string; payload: Record<string, unknown> });
    };

    it('two servers on one state directory (or store) emit cert_expiring (with the days left) and cert_expired once per certificate', async () => {
      // Current now: partner (200 days), bank (365 days), short (5 days, inside the 30-day window), old (expired in 2020).
      assert.equal(cert('add', file('soon.pem'), '--tenant', 'acme', '--name', 'short').code, 0);
      assert.equal(cert('add', makeExpired('old'), '--tenant', 'acme', '--name', 'old').code, 0);
      const expiring = JSON.parse(cert('list', '--tenant', 'acme', '--expiring-in', '1', '--json').stdout) as {
        name: string;
        status: string;
      }[];
      assert.deepEqual(
        expiring.map((c) => [c.name, c.status]),
        [['old', 'expired']],
        'expired entries are always shown, first (soonest expiry)',
      );
      servers.push(await startServer(sandbox, ['--no-auth']), await startServer(sandbox, ['--no-auth']));
      const [first] = await waitFor(
        'the start-up sweep',
        () => {
          const r = eventRows('cert_expiring');
          return r.length > 0 && r;
        },
        15_000,
        200,
      );
      assert.equal(first!.tenant, 'acme');
      const payload = first!.payload as { certificate: string; days_left: number };
      assert.equal(payload.certificate, 'short');
      assert.ok(payload.days_left === 4 || payload.days_left === 5, String(payload.days_left));
      await new Promise((r) => setTimeout(r, 1500)); // both servers' start-up sweeps are long done
      assert.equal(eventRows('cert_expiring').length, 1, 'one sweep per installation, not per process');
      const expired = eventRows('cert_expired');
      assert.equal(expired.length, 1);
      assert.equal(expired[0]!.payload.certificate, 'old');
    });

    it('a restart sweeps again at start (the spec: "and at startup"), however recent the last periodic sweep', async () => {
      // The servers of the test above swept at their start; stop them, as an operator does before a deploy.
      for (const s of servers.splice(0)) assert.equal(await s.stop(), 0);
      const before = eventRows('cert_expiring').length;
      assert.equal(before, 1);
      // Starts within this of another's start-up sweep share it (the two servers above); 1 s here
      // instead of 10 s, so the test need not wait: it is past by now.
      await new Promise((r) => setTimeout(r, 1100));
      servers.push(await startServer(sandbox, ['--no-auth'], { SVC_TEST_CERT_START_SHARE_MS: '1000' }));
      const rows = await waitFor(
        'the restart sweep',
        () => {
          const r = eventRows('cert_expiring');
          return r.length > before && r;
        },
        15_000,
        200,
      );
      assert.equal(rows.length, 2, 'the current warning emitted again, once');
      assert.equal(eventRows('cert_expired').length, 2);
    });
  });
});
