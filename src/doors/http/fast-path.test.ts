import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hotRoute } from './fast-path.js';

/** The expression the fast path matched with before hotRoute: the oracle every URL is checked against. */
const ORACLE = /^\/flows\/([^/?#]+)\/([^/?#]+)\/(run|enqueue)(?:\?.*)?$/;

function oracle(url: string) {
  const m = ORACLE.exec(url);
  return m === null ? undefined : { tenant: m[1], name: m[2], route: m[3] };
}

const URLS = [
  '/flows/acme/echo/run',
  '/flows/acme/echo/enqueue',
  '/flows/acme/echo/run?x=1',
  '/flows/acme/echo/run?',
  '/flows/acme/echo/enqueue?a=/b#c',
  '/flows/ac%2Fme/ec%20ho/run',
  '/flows/acme/echo/runs',
  '/flows/acme/echo/ru',
  '/flows/acme/echo/Run',
  '/flows/acme/echo/run/',
  '/flows/acme/echo/run#x',
  '/flows/acme/echo/enqueuex',
  '/flows/acme/echo/metadata',
  '/flows/acme/echo',
  '/flows/acme/echo/',
  '/flows/acme//run',
  '/flows//echo/run',
  '/flows///run',
  '/flows/a/b/c/run',
  '/flows/a#b/c/run',
  '/flows/a/b#c/run',
  '/flows/a?b/c/run',
  '/flows/a/b?/run',
  '/flows/a/b/run?q#h',
  '/flows/',
  '/flows',
  '/flowsx/a/b/run',
  '/Flows/a/b/run',
  'flows/a/b/run',
  '//flows/a/b/run',
  '/flows/a/b/enqueue?',
  '/flows/x/y/run?/flows/a/b/enqueue',
  '',
  '/',
  '*',
  '/flows/\u00e9/\u00ff/run',
];

describe('hotRoute: the URLs the fast path takes', () => {
  for (const url of URLS) {
    it(`${JSON.stringify(url)} answers as the fast path's old expression did`, () => {
      assert.deepEqual(hotRoute(url) === undefined ? undefined : { ...hotRoute(url) }, oracle(url));
    });
  }

  it('every URL of up to four characters from a small alphabet around a hot route answers as the old expression did', () => {
    const alphabet = ['/', '?', '#', 'a', '%'];
    const prefixes = ['/flows/a/b/', '/flows/a/', '/flows/', '/flows/a/b/run', '/flows/a/b/enqueue'];
    let checked = 0;
    const walk = (suffix: string, depth: number): void => {
      for (const p of prefixes) {
        const url = p + suffix;
        const got = hotRoute(url);
        assert.deepEqual(got === undefined ? undefined : { ...got }, oracle(url), url);
        checked++;
      }
      if (depth === 0) return;
      for (const c of alphabet) walk(suffix + c, depth - 1);
      for (const word of ['run', 'enqueue']) if (depth >= 2) walk(suffix + word, depth - 2);
    };
    walk('', 4);
    assert.ok(checked > 3000, `${checked} URLs checked`);
  });
});
