import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { ExitError } from '../common/errors.js';
import { configCheck, registerConfigCheck } from './config-check.js';
import {
  checkFlowConfig,
  configRefusalMessage,
  configVariable,
  startupConfigRefusals,
} from '../app/runtime/config-check.js';

const flows = [
  { tenant: 'acme', flow: 'orders', config: ['partner_url', 'region', 'api-host'] },
  { tenant: 'acme', flow: 'billing', config: [] },
];
const env = { SVC_CONFIG_PARTNER_URL: 'https://secret.example', SVC_CONFIG_REGION: '' };

test('each declared key is reported set, set-but-empty or MISSING by its SVC_CONFIG_ variable, never by value', () => {
  const rows = checkFlowConfig(flows, env);
  assert.deepEqual(
    rows.map((r) => [r.tenant, r.flow, r.key, r.variable, r.state]),
    [
      ['acme', 'orders', 'partner_url', 'SVC_CONFIG_PARTNER_URL', 'set'],
      ['acme', 'orders', 'region', 'SVC_CONFIG_REGION', 'set-but-empty'],
      ['acme', 'orders', 'api-host', 'SVC_CONFIG_API_HOST', 'MISSING'],
    ],
  );
  assert.ok(!JSON.stringify(rows).includes('secret.example'));
  assert.equal(configVariable('a.b'), 'SVC_CONFIG_A_B');
});

test('the start-up refusal names tenant, flow, key and variable; set-but-empty is accepted', () => {
  const refusals = startupConfigRefusals(flows, env);
  assert.equal(refusals.length, 1);
  assert.match(refusals[0]!, /'acme\/orders'/);
  assert.match(refusals[0]!, /'api-host'/);
  assert.match(refusals[0]!, /SVC_CONFIG_API_HOST/);
  assert.deepEqual(startupConfigRefusals(flows, { ...env, SVC_CONFIG_API_HOST: '' }), []);
  assert.equal(
    configRefusalMessage({ tenant: 't', flow: 'f', key: 'k', variable: 'SVC_CONFIG_K', state: 'MISSING' }).startsWith(
      'refusing to start',
    ),
    true,
  );
});

test('svc config check prints the report and exits 1 on a missing key, an unreadable artifact or an unlistable registry', async () => {
  const lines: string[] = [];
  const errs: string[] = [];
  const saved = { ...process.env };
  try {
    Object.assign(process.env, env);
    delete process.env.SVC_CONFIG_API_HOST;
    await assert.rejects(
      configCheck(
        { db: 'x.db' },
        { list: () => ({ flows, unreadable: [] }) },
        (l) => lines.push(l),
        (l) => errs.push(l),
      ),
      (e: unknown) => e instanceof ExitError && e.exitCode === 1 && /SVC_CONFIG_API_HOST/.test(e.message),
    );
    assert.equal(lines.length, 3);
    assert.ok(lines.every((l) => !l.includes('secret.example')));
    process.env.SVC_CONFIG_API_HOST = 'h';
    await configCheck(
      { db: 'x.db' },
      { list: () => ({ flows, unreadable: [] }) },
      () => undefined,
      () => undefined,
    );
    await assert.rejects(
      configCheck(
        { db: 'x.db' },
        { list: () => ({ flows: [], unreadable: [{ tenant: 'a', flow: 'b', error: 'hash mismatch' }] }) },
        () => undefined,
        (l) => errs.push(l),
      ),
      ExitError,
    );
    assert.ok(errs.some((l) => l.includes('a/b') && l.includes('hash mismatch')));
    await assert.rejects(
      configCheck(
        { db: 'x.db' },
        {
          list: () => {
            throw new Error('disk gone');
          },
        },
        () => undefined,
        () => undefined,
      ),
      /cannot list the registry/,
    );
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
  const program = new Command('svc');
  registerConfigCheck(program, { list: () => ({ flows: [], unreadable: [] }) });
  assert.ok(program.commands.find((c) => c.name() === 'config')?.commands.some((c) => c.name() === 'check'));
});
