/** `svc config check` through the built binary: each deployed flow's keys as set / set-but-empty / MISSING. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { corruptArtifact, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, onlyOn, svc } from './helpers/svc.js';

const PRICING = flow(
  'acme',
  'pricing',
  'config: [pricing_url, partner.id]',
  '## Step: answer\n```ntd\n{"ok": true}\n```',
);
const PLAIN = flow('acme', 'plain', '', '## Step: answer\n```ntd\n{"ok": true}\n```');

describe('svc config check', () => {
  const sandbox = makeSandbox();
  const SECRET_VALUE = 'https://pricing.internal.example:8443/secret-path';
  before(() => {
    createTenant(sandbox, 'acme');
    deployFlow(sandbox, PRICING);
    deployFlow(sandbox, PLAIN);
  });
  after(() => sandbox.cleanup());

  const check = (env: NodeJS.ProcessEnv) => {
    const clean: NodeJS.ProcessEnv = { SVC_CONFIG_PRICING_URL: undefined, SVC_CONFIG_PARTNER_ID: undefined, ...env };
    return svc(sandbox, ['config', 'check', '--db', sandbox.db], { env: clean });
  };

  it('lists every key of every deployed flow as set and exits 0 when all are set, never printing a value', () => {
    const r = check({ SVC_CONFIG_PRICING_URL: SECRET_VALUE, SVC_CONFIG_PARTNER_ID: '42' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /acme\/pricing\s+pricing_url\s+SVC_CONFIG_PRICING_URL\s+set\b/);
    assert.match(r.stdout, /acme\/pricing\s+partner\.id\s+SVC_CONFIG_PARTNER_ID\s+set\b/);
    assert.doesNotMatch(r.stdout + r.stderr, /secret-path|pricing\.internal/);
    assert.doesNotMatch(r.stdout, /acme\/plain/);
  });

  it('reports an empty variable as set-but-empty and still exits 0', () => {
    const r = check({ SVC_CONFIG_PRICING_URL: '', SVC_CONFIG_PARTNER_ID: '42' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /pricing_url\s+SVC_CONFIG_PRICING_URL\s+set-but-empty/);
  });

  it('reports an unset variable as MISSING and exits non-zero naming the variable', () => {
    const r = check({ SVC_CONFIG_PARTNER_ID: '42' });
    assert.notEqual(r.code, 0);
    assert.match(r.stdout, /acme\/pricing\s+pricing_url\s+SVC_CONFIG_PRICING_URL\s+MISSING/);
    assert.match(r.stderr, /SVC_CONFIG_PRICING_URL/);
  });

  it('reads the variable from a .env file in the working directory', () => {
    writeFileSync(join(sandbox.home, '.env'), 'SVC_CONFIG_PRICING_URL=x\nSVC_CONFIG_PARTNER_ID=\n');
    try {
      const r = svc(sandbox, ['config', 'check', '--db', sandbox.db]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.match(r.stdout, /SVC_CONFIG_PARTNER_ID\s+set-but-empty/);
    } finally {
      writeFileSync(join(sandbox.home, '.env'), '');
    }
  });

  it(
    'exits non-zero when the registry cannot be listed',
    { skip: onlyOn('sqlite', 'a registry file that is not a database') },
    () => {
      writeFileSync(join(sandbox.home, 'garbage.db'), 'this is not an SQLite database, just text bytes '.repeat(100));
      const r = svc(sandbox, ['config', 'check', '--db', join(sandbox.home, 'garbage.db')]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /cannot list the registry/);
    },
  );

  it('exits non-zero when the store cannot be reached, naming it without its password', () => {
    const r = svc(sandbox, ['config', 'check', '--store', 'postgres://svc:secretpw@127.0.0.1:1/nowhere']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot list the registry at postgres:\/\/svc:\*\*\*@127\.0\.0\.1:1\/nowhere: /);
    assert.doesNotMatch(r.stderr, /secretpw/);
  });

  it('exits non-zero naming an unreadable artifact', () => {
    corruptArtifact(sandbox, 'acme', 'plain');
    const r = check({ SVC_CONFIG_PRICING_URL: 'x', SVC_CONFIG_PARTNER_ID: 'y' });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /acme\/plain: artifact unreadable/);
    assert.match(r.stdout, /acme\/pricing\s+pricing_url/);
  });
});
