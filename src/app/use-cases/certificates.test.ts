import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { SqliteCertificatesStore } from '../../store/sqlite/sqlite-certificates-store.js';
import { openDb } from '../../store/sqlite/db.js';
import { registryMigrations } from '../../store/sqlite/migrations/registry.js';
import { certificateView, listCertificates, parseCertificatePem, sweepCertificates } from './certificates.js';

const DAY = 86_400_000;

function selfSigned(days: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        join(dir, 'k'),
        '-out',
        join(dir, 'c'),
        '-days',
        String(days),
        '-subj',
        '/CN=t',
      ],
      { stdio: 'ignore' },
    );
    return readFileSync(join(dir, 'c'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('status by time: valid, expires in N days inside the window, expired after validTo, replaced whatever the time', async () => {
  const db = openDb(':memory:', registryMigrations);
  db.prepare(
    "INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES ('t', 't', 'active', '[]', 'x')",
  ).run();
  const certs = new SqliteCertificatesStore(db);
  const parsed = parseCertificatePem(selfSigned(60));
  const row = certs.add({ tenant: 't', name: 'c', kind: 'client_cert', ...parsed, createdAt: 'x' })!;
  const to = Date.parse(row.validTo);
  assert.equal(certificateView(row, 30, to - 45 * DAY).status, 'valid');
  assert.equal(certificateView(row, 30, to - 10 * DAY - 1000).status, 'expires in 10 days');
  assert.equal(certificateView(row, 30, to + 1000).status, 'expired');
  // After expiry: the sweep reports cert_expired; --expiring-in always shows it.
  assert.deepEqual(
    (await sweepCertificates({ certificates: certs }, 30, to + DAY)).map((e) => e.event),
    ['cert_expired'],
  );
  assert.deepEqual(await sweepCertificates({ certificates: certs }, 30, to - 45 * DAY), []);
  assert.deepEqual(
    (await listCertificates({ certificates: certs }, { expiringInDays: 0, warningDays: 30 }, to + DAY)).map(
      (v) => v.status,
    ),
    ['expired'],
  );
  const replaced = certs.replace(
    { tenant: 't', name: 'c', kind: 'client_cert', ...parseCertificatePem(selfSigned(90)), createdAt: 'y' },
    'y',
  )!;
  assert.equal(certificateView(replaced.retired, 30, to + DAY).status, 'replaced');
  const swept = await sweepCertificates({ certificates: certs }, 30, to + DAY);
  assert.deepEqual(
    swept.map((e) => [e.event, e.row.id]),
    [['cert_expiring', replaced.current.id]],
    'only the current entry is swept, never the replaced one',
  );
});

test('claimTaskRun lets exactly one caller run per interval', () => {
  const db = openDb(':memory:', registryMigrations);
  const certs = new SqliteCertificatesStore(db);
  assert.deepEqual(
    [certs.claimTaskRun('s', 1000, 500), certs.claimTaskRun('s', 1200, 500), certs.claimTaskRun('s', 1600, 500)],
    [true, false, true],
  );
});
