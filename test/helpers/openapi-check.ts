/**
 * A structural check of an OpenAPI 3.1 document, written for this project's tests (no validator
 * dependency): the fields the specification requires, the forms it allows for them, every `$ref`
 * resolving, path templates and path parameters agreeing, security names defined, and every schema
 * in the subset json-schema-subset.ts can check (with its examples conforming).
 */
import { schemaDefinitionProblems, valueProblems, type Schema } from './json-schema-subset.js';

type Obj = Record<string, unknown>;

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const TOP_LEVEL = new Set([
  'openapi',
  'info',
  'jsonSchemaDialect',
  'servers',
  'paths',
  'webhooks',
  'components',
  'security',
  'tags',
  'externalDocs',
]);
const PATH_ITEM = new Set<string>(['$ref', 'summary', 'description', 'servers', 'parameters', ...HTTP_METHODS]);
const OPERATION = new Set([
  'tags',
  'summary',
  'description',
  'externalDocs',
  'operationId',
  'parameters',
  'requestBody',
  'responses',
  'callbacks',
  'deprecated',
  'security',
  'servers',
]);
const RESPONSE = new Set(['description', 'headers', 'content', 'links']);
const PARAMETER_IN = new Set(['query', 'header', 'path', 'cookie']);
const STATUS_KEY = /^([1-5][0-9]{2}|[1-5]XX|default)$/;
/** `type/subtype` or a range, with optional `; name=value` parameters. */
const MEDIA_TYPE = /^(\*\/\*|[A-Za-z0-9][\w.+-]*\/(\*|[A-Za-z0-9][\w.+-]*))(\s*;\s*[\w-]+=[\w.-]+)*$/;
/** Header parameters the specification says are ignored: describing them would mislead. */
const IGNORED_HEADER_PARAMETERS = new Set(['accept', 'content-type', 'authorization']);
const SECURITY_TYPES = new Set(['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect']);

function isObject(value: unknown): value is Obj {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Follows a local JSON pointer (`#/components/...`); undefined when it leads nowhere. */
export function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

/** The object itself, or what its `$ref` points to. */
export function deref<T = Obj>(doc: unknown, value: unknown): T {
  if (isObject(value) && typeof value.$ref === 'string') {
    const target = resolvePointer(doc, value.$ref);
    if (target === undefined) throw new Error(`unresolvable $ref ${value.$ref}`);
    return target as T;
  }
  return value as T;
}

/**
 * True when a response's Content-Type matches a documented media type: the same type and subtype
 * (case-insensitive; `*` in the document matches any), and every parameter the document names
 * present with the same value. Parameters the document does not name are allowed.
 */
export function mediaTypeMatches(documented: string, actual: string): boolean {
  const parse = (text: string) => {
    const [essence, ...params] = text.split(';').map((s) => s.trim().toLowerCase());
    return {
      essence: essence!,
      params: new Map(
        params.map((p) => p.split('=', 2).map((s) => s.trim().replace(/^"|"$/g, '')) as [string, string]),
      ),
    };
  };
  const d = parse(documented);
  const a = parse(actual);
  const [dType, dSub] = d.essence.split('/');
  const [aType, aSub] = a.essence.split('/');
  if (dType !== '*' && dType !== aType) return false;
  if (dSub !== '*' && dSub !== aSub) return false;
  for (const [name, value] of d.params) if (a.params.get(name) !== value) return false;
  return true;
}

function refProblems(doc: unknown, node: unknown, at: string, out: string[]): void {
  if (Array.isArray(node)) node.forEach((child, i) => refProblems(doc, child, `${at}[${i}]`, out));
  else if (isObject(node)) {
    if (typeof node.$ref === 'string' && resolvePointer(doc, node.$ref) === undefined)
      out.push(`${at}: $ref ${node.$ref} resolves to nothing`);
    for (const [key, child] of Object.entries(node)) refProblems(doc, child, `${at}.${key}`, out);
  }
}

function schemaProblems(doc: unknown, schema: unknown, at: string, out: string[]): void {
  const problems = schemaDefinitionProblems(schema, at);
  out.push(...problems);
  if (problems.length > 0 || !isObject(schema) || !Array.isArray(schema.examples)) return;
  const resolve = (ref: string) => deref<Schema>(doc, { $ref: ref });
  schema.examples.forEach((example, i) => out.push(...valueProblems(schema, example, resolve, `${at}.examples[${i}]`)));
}

function contentProblems(doc: unknown, content: unknown, at: string, out: string[]): void {
  if (!isObject(content) || Object.keys(content).length === 0) {
    out.push(`${at}: content must map at least one media type`);
    return;
  }
  for (const [mediaType, media] of Object.entries(content)) {
    if (!MEDIA_TYPE.test(mediaType)) out.push(`${at}: "${mediaType}" is not a media type or range`);
    if (!isObject(media) || media.schema === undefined)
      out.push(`${at}["${mediaType}"]: a media type object needs a schema here`);
    else schemaProblems(doc, media.schema, `${at}["${mediaType}"].schema`, out);
  }
}

function parameterProblems(doc: unknown, list: unknown, at: string, out: string[]): Obj[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) {
    out.push(`${at}: parameters must be an array`);
    return [];
  }
  const params = list.map((p) => deref(doc, p));
  const seen = new Set<string>();
  params.forEach((p, i) => {
    const where = `${at}[${i}]`;
    if (typeof p.name !== 'string' || p.name === '') out.push(`${where}: a parameter needs a name`);
    if (typeof p.in !== 'string' || !PARAMETER_IN.has(p.in))
      out.push(`${where}: "in" must be query, header, path or cookie`);
    if (typeof p.description !== 'string') out.push(`${where}: no description`);
    if (p.in === 'path' && p.required !== true) out.push(`${where}: a path parameter must be required`);
    if (p.in === 'header' && typeof p.name === 'string' && IGNORED_HEADER_PARAMETERS.has(p.name.toLowerCase()))
      out.push(`${where}: header parameter ${p.name} is ignored by OpenAPI`);
    if (p.schema === undefined) out.push(`${where}: no schema`);
    else schemaProblems(doc, p.schema, `${where}.schema`, out);
    const id = `${String(p.in)} ${String(p.name).toLowerCase()}`;
    if (seen.has(id)) out.push(`${where}: parameter ${id} is declared twice`);
    seen.add(id);
  });
  return params;
}

function responseProblems(doc: unknown, raw: unknown, at: string, out: string[]): void {
  const response = deref(doc, raw);
  if (!isObject(response)) {
    out.push(`${at}: a response must be an object`);
    return;
  }
  for (const key of Object.keys(response))
    if (!RESPONSE.has(key) && !key.startsWith('x-')) out.push(`${at}: unknown field "${key}"`);
  if (typeof response.description !== 'string') out.push(`${at}: a response needs a description`);
  if (response.content !== undefined) contentProblems(doc, response.content, `${at}.content`, out);
  if (response.headers !== undefined) {
    if (!isObject(response.headers)) out.push(`${at}.headers: must be an object`);
    else
      for (const [name, rawHeader] of Object.entries(response.headers)) {
        if (name.toLowerCase() === 'content-type')
          out.push(`${at}.headers: Content-Type is ignored by OpenAPI; it belongs in content`);
        const h = deref(doc, rawHeader);
        if (!isObject(h) || h.schema === undefined) out.push(`${at}.headers.${name}: a header needs a schema`);
        else schemaProblems(doc, h.schema, `${at}.headers.${name}.schema`, out);
        if (isObject(h) && h.required !== undefined && typeof h.required !== 'boolean')
          out.push(`${at}.headers.${name}: required must be a boolean`);
      }
  }
}

function operationProblems(
  doc: Obj,
  op: Obj,
  at: string,
  pathVars: string[],
  pathParams: Obj[],
  ids: Set<string>,
  out: string[],
): void {
  for (const key of Object.keys(op))
    if (!OPERATION.has(key) && !key.startsWith('x-')) out.push(`${at}: unknown field "${key}"`);
  if (typeof op.operationId === 'string') {
    if (ids.has(op.operationId)) out.push(`${at}: operationId ${op.operationId} is not unique`);
    ids.add(op.operationId);
  }
  const tagNames = new Set(Array.isArray(doc.tags) ? doc.tags.map((t) => (isObject(t) ? t.name : undefined)) : []);
  if (Array.isArray(op.tags))
    for (const t of op.tags) if (!tagNames.has(t)) out.push(`${at}: tag ${String(t)} is not declared in tags`);
  const params = [...pathParams, ...parameterProblems(doc, op.parameters, `${at}.parameters`, out)];
  const declared = new Set(params.filter((p) => p.in === 'path').map((p) => p.name));
  for (const v of pathVars) if (!declared.has(v)) out.push(`${at}: path variable {${v}} has no path parameter`);
  for (const name of declared)
    if (!pathVars.includes(String(name))) out.push(`${at}: path parameter ${String(name)} is not in the path`);
  if (op.requestBody !== undefined) {
    const body = deref(doc, op.requestBody);
    if (!isObject(body)) out.push(`${at}.requestBody: must be an object`);
    else contentProblems(doc, body.content, `${at}.requestBody.content`, out);
  }
  if (!isObject(op.responses) || Object.keys(op.responses).length === 0)
    out.push(`${at}: responses must name at least one answer`);
  else
    for (const [status, response] of Object.entries(op.responses)) {
      if (!STATUS_KEY.test(status)) out.push(`${at}.responses: "${status}" is not a status code, range or default`);
      responseProblems(doc, response, `${at}.responses.${status}`, out);
    }
  const schemes =
    isObject(doc.components) && isObject(doc.components.securitySchemes) ? doc.components.securitySchemes : {};
  if (op.security !== undefined) {
    if (!Array.isArray(op.security)) out.push(`${at}.security: must be an array`);
    else
      for (const req of op.security)
        for (const name of isObject(req) ? Object.keys(req) : [])
          if (!(name in schemes)) out.push(`${at}.security: scheme ${name} is not defined`);
  }
}

/** Everything structurally wrong with `doc` as an OpenAPI 3.1 document; empty when nothing is. */
export function openApiProblems(doc: unknown): string[] {
  const out: string[] = [];
  if (!isObject(doc)) return ['the document is not a JSON object'];
  for (const key of Object.keys(doc))
    if (!TOP_LEVEL.has(key) && !key.startsWith('x-')) out.push(`unknown top-level field "${key}"`);
  if (typeof doc.openapi !== 'string' || !/^3\.1\.\d+$/.test(doc.openapi))
    out.push(`openapi must be 3.1.x, is ${JSON.stringify(doc.openapi)}`);
  if (!isObject(doc.info) || typeof doc.info.title !== 'string' || typeof doc.info.version !== 'string')
    out.push('info needs a title and a version');
  if (!isObject(doc.paths) && !isObject(doc.webhooks) && !isObject(doc.components))
    out.push('one of paths, webhooks or components is required');
  refProblems(doc, doc, '$', out);
  if (isObject(doc.components)) {
    const c = doc.components;
    if (isObject(c.schemas))
      for (const [name, s] of Object.entries(c.schemas)) schemaProblems(doc, s, `components.schemas.${name}`, out);
    if (isObject(c.securitySchemes))
      for (const [name, s] of Object.entries(c.securitySchemes)) {
        if (!isObject(s) || typeof s.type !== 'string' || !SECURITY_TYPES.has(s.type))
          out.push(`components.securitySchemes.${name}: unknown type`);
        else if (s.type === 'http' && typeof s.scheme !== 'string')
          out.push(`components.securitySchemes.${name}: an http scheme needs "scheme"`);
      }
  }
  const ids = new Set<string>();
  const templates = new Map<string, string>();
  for (const [path, item] of Object.entries(isObject(doc.paths) ? doc.paths : {})) {
    if (!path.startsWith('/')) out.push(`path ${path}: must start with "/"`);
    const shape = path.replace(/\{[^}]+\}/g, '{}');
    if (templates.has(shape)) out.push(`path ${path}: the same template as ${templates.get(shape)}`);
    templates.set(shape, path);
    if (!isObject(item)) {
      out.push(`path ${path}: must be an object`);
      continue;
    }
    for (const key of Object.keys(item))
      if (!PATH_ITEM.has(key) && !key.startsWith('x-')) out.push(`path ${path}: unknown field "${key}"`);
    const vars = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    const pathParams = parameterProblems(doc, item.parameters, `path ${path}.parameters`, out);
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (op === undefined) continue;
      if (!isObject(op)) out.push(`${method.toUpperCase()} ${path}: must be an object`);
      else operationProblems(doc, op, `${method.toUpperCase()} ${path}`, vars, pathParams, ids, out);
    }
  }
  return out;
}
