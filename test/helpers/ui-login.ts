/** Logging in to the management UI over real HTTP, as a browser does: the form's CSRF token and cookie, then the POST. */
import assert from 'node:assert/strict';

const cookiesOf = (r: Response): string[] => r.headers.getSetCookie().map((c) => c.split(';', 1)[0]!);

/**
 * Logs `username` in at `base` (the server's URL); asserts the 303 to `/ui`.
 * @returns the Cookie header of the session (the CSRF cookie and the session's)
 */
export async function uiLogin(base: string, username: string, password: string): Promise<string> {
  const form = await fetch(`${base}/ui/login`);
  const csrfCookie = cookiesOf(form).join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
  const r = await fetch(`${base}/ui/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, username, password }),
  });
  assert.equal(r.status, 303, `login of ${username}`);
  assert.equal(r.headers.get('location'), '/ui');
  return [csrfCookie, ...cookiesOf(r)].join('; ');
}
