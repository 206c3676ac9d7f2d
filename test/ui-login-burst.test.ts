/**
 * Black-box: the UI login throttle against what a hostile client does (issue 33, items 2 and 3).
 * A burst of wrong passwords sent at once gets only the free checks, the right one last in the
 * burst is not let in on their back, `/enqueue` keeps answering while the burst is hashed, and
 * failures from one address never lock the owner out at another.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, type IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { enqueue, OK_FLOW, tenantWithKey } from './helpers/queue-flows.js';
import { deployFlow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

const PASSWORD = 'a long enough passphrase 42';

const cookiesOf = (r: Response): string[] => r.headers.getSetCookie().map((c) => c.split(';', 1)[0]!);

/** The login form's CSRF cookie and token, for posts from one client. */
async function loginForm(base: string): Promise<{ cookie: string; csrf: string }> {
  const form = await fetch(`${base}/ui/login`);
  return { cookie: cookiesOf(form).join('; '), csrf: /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]! };
}

/** Posts a login from `address` (a loopback address of its own: the server sees each as a client). */
function postLogin(
  base: string,
  form: { cookie: string; csrf: string },
  password: string,
  address: string,
): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  const body = new URLSearchParams({ _csrf: form.csrf, username: 'admin', password }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/ui/login`,
      {
        method: 'POST',
        localAddress: address,
        headers: {
          cookie: form.cookie,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('UI login under a burst of attempts', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let key = '';

  before(async () => {
    key = tenantWithKey(sandbox);
    deployFlow(sandbox, OK_FLOW);
    server = await startServer(sandbox, [], { SVC_UI_ADMIN_USER: 'admin', SVC_UI_ADMIN_PASS: PASSWORD });
  });
  after(async () => {
    await server?.stop();
    sandbox.cleanup();
  });

  it('60 attempts at once: few passwords checked, the right one last is not let in, /enqueue keeps answering', async (t) => {
    const form = await loginForm(server.url);
    const enqueueMs: number[] = [];
    let bursting = true;
    const probe = (async () => {
      for (let i = 0; bursting; i++) {
        const t0 = performance.now();
        const r = await enqueue(server.url, 'ok', `{"n": ${i}}`, { key, correlationId: `probe-${i}` });
        assert.equal(r.status, 202);
        enqueueMs.push(performance.now() - t0);
        await new Promise((res) => setTimeout(res, 20));
      }
    })();
    const attempts = Array.from({ length: 60 }, (_, i) => (i === 59 ? PASSWORD : `wrong password number ${i}`));
    const answers = await Promise.all(attempts.map((p) => postLogin(server.url, form, p, '127.0.0.7')));
    bursting = false;
    await probe;
    const statuses = answers.map((r) => r.status);
    const checked = statuses.filter((s) => s !== 429).length;
    const sorted = [...enqueueMs].sort((a, b) => a - b);
    t.diagnostic(
      `passwords checked ${checked} of 60; the last (right) answered ${statuses[59]}; /enqueue during the burst: ` +
        `${sorted.length} requests, p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`,
    );
    assert.ok(checked <= 5, `passwords checked: ${checked} (${statuses.join(' ')})`);
    assert.notEqual(statuses[59], 303, 'the right password, last in the burst, is not let in on its back');
    for (const r of answers.filter((x) => x.status === 429)) assert.ok(Number(r.headers['retry-after']) >= 1);
    const max = sorted.at(-1)!;
    assert.ok(max < 1000, `/enqueue during the burst: max ${max.toFixed(0)} ms over ${enqueueMs.length} requests`);
  });

  it('failures from one address never lock the owner out at another', async () => {
    const form = await loginForm(server.url);
    for (let i = 0; i < 8; i++) await postLogin(server.url, form, `wrong again ${i}`, '127.0.0.8');
    const blocked = await postLogin(server.url, form, PASSWORD, '127.0.0.8');
    assert.equal(blocked.status, 429, 'the guessing address waits');
    const owner = await postLogin(server.url, await loginForm(server.url), PASSWORD, '127.0.0.20');
    assert.equal(owner.status, 303, 'the owner at another address is let in');
  });
});
