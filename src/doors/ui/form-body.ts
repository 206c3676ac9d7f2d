/**
 * The UI's form bodies, read as every API body is (readBody): under a size ceiling and under
 * `request_body_timeout_secs`, with the connection closed after a body given up on. A form is small:
 * a client trickling one holds a connection (and a login attempt) no longer than an API caller may.
 */
import { parse } from 'node:querystring';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SvcError } from '../../common/errors.js';
import { DEFAULT_BODY_TIMEOUT_MS, readBody } from '../http/body.js';

/** The largest form body the UI reads, in bytes; a larger one gets 413. */
export const UI_FORM_MAX_BYTES = 64 * 1024;
/** The largest file upload (a form with a file, multipart) the UI reads: a candidate flow file. */
export const UI_UPLOAD_MAX_BYTES = 1024 * 1024;

/**
 * Registers the `application/x-www-form-urlencoded` parser on the UI's (encapsulated) app: 408 when
 * the body has not arrived `bodyTimeoutMs` after reading began, 413 past UI_FORM_MAX_BYTES; the UI's
 * error handler renders either as a page. Fields arrive as strings, a repeated one as an array (the
 * UI keeps its first value); the object has no prototype.
 * @param bodyTimeoutMs `request_body_timeout_secs` in milliseconds. @default DEFAULT_BODY_TIMEOUT_MS
 */
export function registerFormBody(app: FastifyInstance, bodyTimeoutMs: number = DEFAULT_BODY_TIMEOUT_MS): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', async (req: FastifyRequest) => {
    const body = await readBody(req.raw, UI_FORM_MAX_BYTES, bodyTimeoutMs);
    return parse(body.toString('utf8'));
  });
  // A form with a file (the Replay page's candidate): every field a string, a file field its text
  // (UTF-8) with its name beside it as `<field>_name`. The fetch API's own multipart reader parses it.
  app.addContentTypeParser('multipart/form-data', async (req: FastifyRequest) => {
    const body = await readBody(req.raw, UI_UPLOAD_MAX_BYTES, bodyTimeoutMs);
    let form: FormData;
    try {
      form = await new Response(body, { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
    } catch {
      throw new SvcError('SVC_ERR_INVALID_INPUT', 'the form could not be read (malformed multipart body)');
    }
    const fields = Object.create(null) as Record<string, string>;
    for (const [name, value] of form) {
      if (name in fields) continue;
      if (typeof value === 'string') fields[name] = value;
      else {
        fields[name] = await value.text();
        fields[`${name}_name`] ??= value.name;
      }
    }
    return fields;
  });
}
