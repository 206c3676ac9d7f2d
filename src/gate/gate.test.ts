import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { SvcError } from '../common/errors.js';
import { Gate, hashApiKey, type GateKey, type GateLookups, type GateRefusal, type GateRequest } from './gate.js';

const RAW = 'svk_0123456789abcdef0123456789abcdef';

function setup(key: Partial<GateKey> = {}, lookups: Partial<GateLookups> = {}) {
  const row: GateKey = { id: 1, tenant: 'acme', scopes: ['*'], flows: [], revoked: false, ...key };
  const refusals: GateRefusal[] = [];
  let keyQueries = 0;
  const gate = new Gate(
    {
      findKeyByHash: (h) => {
        keyQueries++;
        return h === hashApiKey(RAW) ? row : undefined;
      },
      tenantStatus: (t) => (t === 'acme' ? 'active' : t === 'off' ? 'disabled' : undefined),
      latestFlow: () => undefined,
      ...lookups,
    },
    { refused: (r) => refusals.push(r) },
  );
  return { gate, refusals, keyQueries: () => keyQueries };
}

const req = (over: Partial<GateRequest> = {}): GateRequest => ({
  authorization: `Bearer ${RAW}`,
  tenant: 'acme',
  flow: 'orders',
  route: 'run',
  ...over,
});

function refusal(fn: () => unknown): SvcError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SvcError);
    return err;
  }
  assert.fail('expected a refusal');
}

describe('Gate', () => {
  it('passes an active key of the tenant', () => {
    assert.equal(setup().gate.check(req()).key.id, 1);
  });

  it('a missing header gets 401 with WWW-Authenticate: Bearer and no subject', () => {
    const { gate, refusals } = setup();
    const err = refusal(() => gate.check(req({ authorization: undefined })));
    assert.equal(err.status, 401);
    assert.equal(err.message, 'unauthorized');
    assert.equal(err.headers?.['www-authenticate'], 'Bearer');
    assert.equal(refusals[0]!.subjectTenant, undefined);
  });

  it('reads the Bearer scheme in any case (RFC 9110 11.1), over HTTP headers and gRPC metadata alike', () => {
    for (const route of ['run', 'grpc'] as const) {
      for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
        const { gate, refusals } = setup();
        assert.equal(gate.check(req({ authorization: `${scheme} ${RAW}`, route })).key.id, 1, `${route} ${scheme}`);
        assert.deepEqual(refusals, []);
      }
    }
  });

  it('the token itself stays case-sensitive', () => {
    const { gate } = setup();
    assert.equal(refusal(() => gate.check(req({ authorization: `Bearer ${RAW.toUpperCase()}` }))).status, 401);
  });

  it('a malformed header, unknown, revoked or expired key gets 401 without WWW-Authenticate', () => {
    for (const [auth, key] of [
      ['Basic abc', {}],
      [`Bearers ${RAW}`, {}],
      [`xBearer ${RAW}`, {}],
      [`Bearer svk_ffffffffffffffffffffffffffffffff`, {}],
      [`Bearer ${RAW}`, { revoked: true }],
      [`Bearer ${RAW}`, { expiresAt: '2000-01-01T23:59:59Z' }],
    ] as const) {
      const err = refusal(() => setup(key).gate.check(req({ authorization: auth })));
      assert.equal(err.status, 401, auth);
      assert.equal(err.headers, undefined);
    }
  });

  it('a key of another tenant gets 401, audited on the key tenant', () => {
    const { gate, refusals } = setup({ tenant: 'other' });
    assert.equal(refusal(() => gate.check(req())).status, 401);
    assert.equal(refusals[0]!.subjectTenant, 'other');
  });

  it('an unregistered or disabled tenant answers exactly like a missing flow', () => {
    for (const tenant of ['off', 'ghost']) {
      const err = refusal(() => setup({ tenant }).gate.check(req({ tenant })));
      assert.equal(err.status, 404);
      assert.equal(err.message, `flow '${tenant}/orders' not found`);
    }
  });

  it('scope and allowlist both apply, with their 403 texts', () => {
    const scoped = { latestFlow: () => ({ ir: { requiredScope: 'orders:write' } }) };
    assert.equal(
      refusal(() => setup({ scopes: ['orders:read'] }, scoped).gate.check(req())).message,
      'forbidden: insufficient scope',
    );
    assert.equal(setup({ scopes: ['orders:write'] }, scoped).gate.check(req()).key.id, 1);
    assert.equal(setup({ scopes: ['*'] }, scoped).gate.check(req()).key.id, 1);
    assert.equal(
      refusal(() => setup({ flows: ['billing'] }, scoped).gate.check(req())).message,
      'forbidden: flow not permitted for this key',
    );
    assert.equal(refusal(() => setup({ flows: ['orders'], scopes: ['x'] }, scoped).gate.check(req())).status, 403);
    assert.equal(setup({ flows: ['orders'] }).gate.check(req()).key.id, 1);
  });

  it('storage failure while deciding gives 503, never a pass', () => {
    const broken = () => {
      throw new Error('disk I/O error');
    };
    for (const lookups of [{ findKeyByHash: broken }, { tenantStatus: broken }, { latestFlow: broken }]) {
      const err = refusal(() => setup({}, lookups).gate.check(req()));
      assert.equal(err.status, 503);
      assert.equal(err.message, 'authorization temporarily unavailable');
    }
  });

  it('rate limits with 429 and charges refusals of a valid key', () => {
    const { gate } = setup(
      { rateLimit: 2, scopes: ['x'] },
      { latestFlow: (_t, f) => (f === 'guarded' ? { ir: { requiredScope: 'y' } } : undefined) },
    );
    // Two 403s cost the two starting tokens.
    refusal(() => gate.check(req({ flow: 'guarded' })));
    refusal(() => gate.check(req({ flow: 'guarded' })));
    const err = refusal(() => gate.check(req()));
    assert.equal(err.status, 429);
    assert.equal(err.message, 'rate limit exceeded');
    assert.equal(err.headers?.['x-ratelimit-remaining'], '0');
  });

  it('metadata and connector routes cost no token on success', () => {
    const { gate } = setup({ rateLimit: 1 });
    for (let i = 0; i < 5; i++) gate.check(req({ route: 'metadata' }));
    for (let i = 0; i < 5; i++) gate.check(req({ route: 'connector' }));
    gate.check(req());
    assert.equal(refusal(() => gate.check(req())).status, 429);
  });

  it('an unauthenticated caller costs one key query and nothing else', () => {
    let other = 0;
    const { gate, keyQueries } = setup(
      {},
      { tenantStatus: () => (other++, 'active'), latestFlow: () => (other++, undefined) },
    );
    refusal(() => gate.check(req({ authorization: 'Bearer svk_nope' })));
    assert.equal(keyQueries(), 1);
    assert.equal(other, 0);
  });
});

test('a request carrying more than one Authorization value is refused 401, whatever they hold, before any lookup', () => {
  const { gate, refusals, keyQueries } = setup();
  const err = refusal(() => gate.check(req({ authorization: [`Bearer ${RAW}`, `Bearer ${RAW}`] })));
  assert.equal(err.status, 401);
  assert.equal(err.headers?.['www-authenticate'], undefined);
  assert.equal(refusals.at(-1)?.reason, '2 Authorization headers (one is required)');
  assert.equal(keyQueries(), 0);
});
