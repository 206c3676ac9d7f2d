import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidArgumentError } from 'commander';
import { GROUP_MEMBER_FLAG, groupRefusal, memberArgs, processesArg, sharedPort } from './serve-processes.js';

describe('processesArg', () => {
  it('takes 1 to 256 and auto (at least one)', () => {
    assert.equal(processesArg('1'), 1);
    assert.equal(processesArg('256'), 256);
    assert.ok(processesArg('auto') >= 1);
  });
  for (const bad of ['0', '257', '-1', '2.5', 'two', '', ' 2', '0x2', '1e2']) {
    it(`refuses "${bad}"`, () => assert.throws(() => processesArg(bad), InvalidArgumentError));
  }
});

describe('groupRefusal', () => {
  it('refuses --metrics on the shared port, naming --metrics-port', () => {
    assert.match(groupRefusal({ processes: 2, port: 9090, metrics: true }) ?? '', /--metrics-port <p>/);
  });
  it('takes --metrics-port (implied --metrics), and refuses one whose last slot is past 65535', () => {
    assert.equal(groupRefusal({ processes: 2, port: 9090, metrics: true, metricsPort: 9100 }), undefined);
    assert.equal(groupRefusal({ processes: 2, port: 9090, metricsPort: 65534 }), undefined);
    assert.match(groupRefusal({ processes: 3, port: 9090, metricsPort: 65534 }) ?? '', /past port 65535/);
  });
  it('takes the plain flags', () => assert.equal(groupRefusal({ processes: 4, port: 0, grpcPort: 50051 }), undefined));
});

describe('memberArgs', () => {
  const flags = { processes: 2, port: 0, grpcPort: 50051, metricsPort: 9100 };
  it('keeps what was typed, sets the shared port, the gRPC door on slot 0 only, a metrics port per slot', () => {
    const typed = [
      'serve',
      '--db',
      '/s/registry.db',
      '--processes',
      '2',
      '-p',
      '0',
      '--grpc-port',
      '50051',
      '--metrics-port=9100',
      '--no-auth',
    ];
    assert.deepEqual(memberArgs(typed, 0, 40000, flags), [
      'serve',
      '--db',
      '/s/registry.db',
      '--no-auth',
      '--port',
      '40000',
      '--grpc-port',
      '50051',
      '--metrics-port',
      '9100',
      GROUP_MEMBER_FLAG,
    ]);
    assert.deepEqual(memberArgs(typed, 1, 40000, flags), [
      'serve',
      '--db',
      '/s/registry.db',
      '--no-auth',
      '--port',
      '40000',
      '--metrics-port',
      '9101',
      GROUP_MEMBER_FLAG,
    ]);
  });
  it('drops every spelling of the per-member options', () => {
    const typed = [
      'serve',
      '--processes=auto',
      '--port=9090',
      '-p9090',
      '--grpc-port=1',
      '--metrics-port',
      '5',
      '--host',
      '127.0.0.1',
    ];
    assert.deepEqual(memberArgs(typed, 1, 9090, { processes: 2, port: 9090 }), [
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      '9090',
      GROUP_MEMBER_FLAG,
    ]);
  });
  it('a metrics port of 0 stays 0 (any free port) in every slot', () => {
    assert.deepEqual(memberArgs(['serve'], 3, 1, { processes: 4, port: 1, metricsPort: 0 }), [
      'serve',
      '--port',
      '1',
      '--metrics-port',
      '0',
      GROUP_MEMBER_FLAG,
    ]);
  });
});

describe('sharedPort', () => {
  it('keeps a given port and finds a free one for 0', async () => {
    assert.equal(await sharedPort('127.0.0.1', 9090), 9090);
    const found = await sharedPort('127.0.0.1', 0);
    assert.ok(found > 0 && found < 65536);
  });
});
