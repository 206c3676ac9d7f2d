import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SvcError } from '../../common/errors.js';
import { SqliteEventLogStore } from '../../store/sqlite/sqlite-event-log-store.js';
import type { EventRow } from '../../store/event-log/event-log-row.js';
import {
  checkEventKind,
  eventsAfter,
  parseSince,
  parseStatus,
  parseUntil,
  readLogFilter,
  searchEvents,
  statusText,
  tailStart,
  type LogFilter,
} from './event-search.js';

const NOW = Date.parse('2026-01-31T08:00:00Z');

describe('parseSince', () => {
  const cases: [string, string][] = [
    ['30s', '2026-01-31T07:59:30.000Z'],
    ['10m', '2026-01-31T07:50:00.000Z'],
    ['2h', '2026-01-31T06:00:00.000Z'],
    ['7d', '2026-01-24T08:00:00.000Z'],
    ['2026-01-30', '2026-01-30T00:00:00.000Z'],
    ['2026-01-30T08:15', '2026-01-30T08:15:00.000Z'],
    ['2026-01-30T08:15Z', '2026-01-30T08:15:00.000Z'],
    ['2026-01-30T08:15:42', '2026-01-30T08:15:42.000Z'],
    ['2026-01-30T08:15:42Z', '2026-01-30T08:15:42.000Z'],
    ['2026-01-30T08:15:42.9Z', '2026-01-30T08:15:42.900Z'],
    ['2026-01-30T08:15:42.987Z', '2026-01-30T08:15:42.987Z'],
    ['2026-01-30T08:15:42.98765', '2026-01-30T08:15:42.987Z'],
  ];
  for (const [text, iso] of cases) it(`reads "${text}" as ${iso}`, () => assert.equal(parseSince(text, NOW), iso));

  for (const bad of [
    '',
    'yesterday',
    '10',
    '5w',
    '-1h',
    '2026-02-30',
    '2026-13-01',
    '2026-01-30T08:15:00+02:00',
    '2026-01-30T25:00Z',
    '2026-01-30 08:15',
    '2026-01-30T08',
  ]) {
    it(`refuses "${bad}" with a sentence naming the field and the accepted forms`, () => {
      assert.throws(
        () => parseSince(bad, NOW, 'since'),
        (err: SvcError) =>
          err.code === 'SVC_ERR_INVALID_INPUT' &&
          err.message.startsWith('since must be a duration back from now (30s, 10m, 2h, 7d), a UTC day') &&
          err.message.endsWith(`got "${bad}"`),
      );
    });
  }
});

describe('parseUntil', () => {
  const cases: [string, string][] = [
    ['2026-01-30', '2026-01-30'],
    ['2026-01-30T08:15', '2026-01-30T08:15'],
    ['2026-01-30T08:15:42Z', '2026-01-30T08:15:42'],
    ['2026-01-30T08:15:42.5Z', '2026-01-30T08:15:42.5'],
    ['1h', '2026-01-31T07:00:00.000'],
  ];
  for (const [text, prefix] of cases)
    it(`reads "${text}" as the prefix ${prefix}`, () => assert.equal(parseUntil(text, NOW), prefix));
  it('refuses what parseSince refuses, naming its own field', () =>
    assert.throws(() => parseUntil('tomorrow', NOW), /^SvcError: --until must be a duration/));
});

describe('parseStatus', () => {
  const cases: [string, [number, number]][] = [
    ['404', [404, 404]],
    ['100', [100, 100]],
    ['599', [599, 599]],
    ['4xx', [400, 499]],
    ['5XX', [500, 599]],
    ['400-599', [400, 599]],
  ];
  for (const [text, [min, max]] of cases)
    it(`reads "${text}" as ${min} to ${max}`, () => assert.deepEqual(parseStatus(text), { min, max }));
  for (const bad of ['failed', '99', '600', '4040', '6xx', '500-400', '2.5e2', '-1', '40 4'])
    it(`refuses "${bad}"`, () =>
      assert.throws(
        () => parseStatus(bad),
        (err: SvcError) =>
          err.code === 'SVC_ERR_INVALID_INPUT' &&
          err.message ===
            `status must be an HTTP status from 100 to 599 (404), a class (4xx) or a range (400-599), got "${bad}"`,
      ));
  it('writes a range back as the form reads it', () => {
    for (const text of ['404', '4xx', '400-599']) assert.equal(statusText(parseStatus(text)), text);
  });
});

describe('readLogFilter', () => {
  it('reads every field, empty ones as "any"', () => {
    assert.deepEqual(
      readLogFilter(
        {
          tenant: 'acme',
          flow: '',
          event: 'completed',
          correlation_id: ' c-1 ',
          status: '4xx',
          since: '1h',
          until: '2026-01-31T07:30',
        },
        NOW,
      ),
      {
        tenant: 'acme',
        flow: undefined,
        event: 'completed',
        correlation_id: 'c-1',
        status: { min: 400, max: 499 },
        since: '2026-01-31T07:00:00.000Z',
        until: '2026-01-31T07:30',
      },
    );
  });
  it('refuses every value it cannot read at once, each naming its field', () => {
    assert.throws(
      () =>
        readLogFilter(
          { tenant: 'Acme', flow: 'a b', event: 'finished', status: 'failed', since: 'yesterday', until: 'soon' },
          NOW,
        ),
      (err: SvcError) => {
        assert.equal(err.code, 'SVC_ERR_INVALID_INPUT');
        for (const part of [
          'tenant "Acme" must start with a lowercase letter or digit',
          'flow "a b" may hold only lowercase letters',
          'unknown event kind "finished"; the log holds received, completed',
          'status must be an HTTP status from 100 to 599',
          'since must be a duration back from now',
          'until must be a duration back from now',
        ])
          assert.ok(err.message.includes(part), `${part} in: ${err.message}`);
        return true;
      },
    );
  });
  it('refuses a trace kind as checkEventKind does', () =>
    assert.throws(() => readLogFilter({ event: 'step_traced' }), /trace rows, not part of the log search/));
});

describe('checkEventKind', () => {
  it('accepts a kind the log holds', () => assert.equal(checkEventKind('completed'), 'completed'));
  it('refuses a trace kind, naming where trace rows are read', () => {
    for (const kind of ['step_traced', 'egress_traced'])
      assert.throws(() => checkEventKind(kind), /trace rows, not part of the log search; only the support role/);
  });
  it('refuses an unknown kind, listing the kinds', () =>
    assert.throws(
      () => checkEventKind('complete'),
      /unknown event kind "complete"; the log holds received, completed/,
    ));
});

function row(i: number, over: Partial<EventRow> = {}): EventRow {
  const ts = `2026-01-31T07:00:${String(i).padStart(2, '0')}Z`;
  return {
    ts,
    correlation_id: `c-${i}`,
    tenant: 'acme',
    flow: 'hello',
    step: null,
    event: 'completed',
    payload: null,
    payload_truncated: 0,
    http_status: 200,
    outcome: null,
    reason: null,
    ...over,
  };
}

/** 20 rows: odd ones of flow `other`, every fifth a trace row of `hello`. */
function seeded(): SqliteEventLogStore {
  const log = SqliteEventLogStore.open(':memory:');
  log.insertMany(
    Array.from({ length: 20 }, (_, i) =>
      row(i + 1, {
        flow: (i + 1) % 2 === 1 ? 'other' : 'hello',
        event: (i + 1) % 5 === 0 ? 'step_traced' : 'completed',
      }),
    ),
  );
  return log;
}

/** What a tail then a walk up to lastId prints, batch by batch of `batch` rows. */
async function tail(log: SqliteEventLogStore, filter: LogFilter, limit: number, batch: number): Promise<string[]> {
  const start = await tailStart(log, filter, limit);
  const out: string[] = [];
  for (
    let after = start.afterId, rows = await eventsAfter(log, filter, after, batch, start.lastId);
    rows.length > 0;
    rows = await eventsAfter(log, filter, after, batch, start.lastId)
  ) {
    out.push(...rows.map((r) => r.correlation_id!));
    after = rows.at(-1)!.id;
  }
  return out;
}

describe('the log search', () => {
  it('a tail prints the newest matching rows oldest first, never a trace row, whatever the batch size', async () => {
    const log = seeded();
    // hello rows: 2, 4, 6, 8, (10 traced), 12, 14, 16, 18, (20 traced)
    for (const batch of [1, 3, 100])
      assert.deepEqual(await tail(log, { flow: 'hello' }, 4, batch), ['c-12', 'c-14', 'c-16', 'c-18']);
    assert.deepEqual(await tail(log, { flow: 'hello' }, 100, 2), [
      'c-2',
      'c-4',
      'c-6',
      'c-8',
      'c-12',
      'c-14',
      'c-16',
      'c-18',
    ]);
    assert.deepEqual(await tail(log, { flow: 'nobody' }, 10, 5), []);
    assert.deepEqual(await tail(log, {}, 0, 5), []);
  });

  it('a tail pages back past its page size to find its start', async () => {
    const log = SqliteEventLogStore.open(':memory:');
    log.insertMany(Array.from({ length: 250 }, (_, i) => row(i % 60, { correlation_id: `c-${i}` })));
    const printed = await tail(log, {}, 230, 50);
    assert.equal(printed.length, 230);
    assert.equal(printed[0], 'c-20');
    assert.equal(printed.at(-1), 'c-249');
  });

  it('a follower sees each later row once, in order, and a since bound applies to the tail', async () => {
    const log = seeded();
    const start = await tailStart(log, { since: '2026-01-31T07:00:15Z' }, 100);
    assert.deepEqual(
      (await eventsAfter(log, { since: '2026-01-31T07:00:15Z' }, start.afterId, 100, start.lastId)).map(
        (r) => r.correlation_id,
      ),
      ['c-16', 'c-17', 'c-18', 'c-19'],
    );
    log.insertMany([row(21), row(22, { event: 'egress_traced' }), row(23, { flow: 'other' })]);
    const next = await eventsAfter(log, {}, start.lastId, 100);
    assert.deepEqual(
      next.map((r) => r.correlation_id),
      ['c-21', 'c-23'],
    );
    assert.deepEqual(await eventsAfter(log, {}, next.at(-1)!.id, 100), []);
  });

  it('a status range keeps the rows whose status lies in it, and an until prefix takes in its whole second', async () => {
    const log = SqliteEventLogStore.open(':memory:');
    log.insertMany([
      row(1, { http_status: 200 }),
      row(2, { http_status: 404 }),
      row(3, { http_status: 499 }),
      row(4, { http_status: 500 }),
      row(5, { http_status: null, event: 'received' }),
      row(6, { http_status: 503, ts: '2026-01-31T07:00:06.250Z' }),
    ]);
    const search = async (filter: LogFilter) =>
      (await searchEvents(log, filter, { limit: 100 })).map((r) => r.correlation_id).reverse();
    assert.deepEqual(await search({ status: parseStatus('4xx') }), ['c-2', 'c-3']);
    assert.deepEqual(await search({ status: parseStatus('400-599') }), ['c-2', 'c-3', 'c-4', 'c-6']);
    assert.deepEqual(await search({ status: parseStatus('404') }), ['c-2']);
    assert.deepEqual(await search({ until: parseUntil('2026-01-31T07:00:05') }), ['c-1', 'c-2', 'c-3', 'c-4', 'c-5']);
    assert.deepEqual(await search({ until: parseUntil('2026-01-31T07:00:06') }), [
      'c-1',
      'c-2',
      'c-3',
      'c-4',
      'c-5',
      'c-6',
    ]);
    assert.deepEqual(await search({ since: parseSince('2026-01-31T07:00:06') }), ['c-6']);
    assert.deepEqual(await search({ since: parseSince('2026-01-31T07:00:06.251') }), []);
  });

  it('searchEvents pages newest first and refuses a trace kind', async () => {
    const log = seeded();
    const first = await searchEvents(log, { flow: 'other' }, { limit: 3 });
    assert.deepEqual(
      first.map((r) => r.correlation_id),
      ['c-19', 'c-17', 'c-13'],
    );
    assert.deepEqual(
      (await searchEvents(log, { flow: 'other' }, { beforeId: first.at(-1)!.id, limit: 2 })).map(
        (r) => r.correlation_id,
      ),
      ['c-11', 'c-9'],
    );
    await assert.rejects(async () => searchEvents(log, { event: 'step_traced' }, { limit: 1 }), /trace rows/);
  });
});
