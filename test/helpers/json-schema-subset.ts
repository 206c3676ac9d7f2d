/**
 * Checks a JSON value against a JSON Schema written in the subset the service's OpenAPI document
 * uses. The structural check (openapi-check.ts) refuses any other keyword, so a schema this
 * validator would not understand cannot pass silently.
 */

export type Schema = Readonly<Record<string, unknown>>;

/** The keywords understood here; `format` and the annotations are accepted and not checked (as JSON Schema 2020-12 does by default). */
export const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
  '$ref',
  'type',
  'const',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'format',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'oneOf',
  'description',
  'examples',
]);

const TYPES: ReadonlySet<string> = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function hasType(type: string, value: unknown): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
    case 'integer':
      return Number.isInteger(value);
    default:
      return typeof value === type;
  }
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Problems of the schema itself: unknown keywords, malformed keyword values (recursively). */
export function schemaDefinitionProblems(schema: unknown, at: string): string[] {
  if (!isObject(schema)) return [`${at}: a schema must be an object`];
  const problems: string[] = [];
  for (const key of Object.keys(schema))
    if (!SCHEMA_KEYWORDS.has(key)) problems.push(`${at}: keyword "${key}" is outside the checked subset`);
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  for (const t of types)
    if (typeof t !== 'string' || !TYPES.has(t)) problems.push(`${at}: unknown type ${JSON.stringify(t)}`);
  if (schema.pattern !== undefined) {
    try {
      new RegExp(String(schema.pattern), 'u');
    } catch {
      problems.push(`${at}: pattern does not compile`);
    }
  }
  if (schema.enum !== undefined && (!Array.isArray(schema.enum) || schema.enum.length === 0))
    problems.push(`${at}: enum must be a non-empty array`);
  if (
    schema.required !== undefined &&
    (!Array.isArray(schema.required) || schema.required.some((r) => typeof r !== 'string'))
  )
    problems.push(`${at}: required must list names`);
  if (isObject(schema.properties))
    for (const [name, sub] of Object.entries(schema.properties))
      problems.push(...schemaDefinitionProblems(sub, `${at}.properties.${name}`));
  if (schema.items !== undefined) problems.push(...schemaDefinitionProblems(schema.items, `${at}.items`));
  if (isObject(schema.additionalProperties))
    problems.push(...schemaDefinitionProblems(schema.additionalProperties, `${at}.additionalProperties`));
  if (schema.oneOf !== undefined) {
    if (!Array.isArray(schema.oneOf) || schema.oneOf.length === 0)
      problems.push(`${at}: oneOf must be a non-empty array`);
    else schema.oneOf.forEach((sub, i) => problems.push(...schemaDefinitionProblems(sub, `${at}.oneOf[${i}]`)));
  }
  return problems;
}

/** Where `value` breaks `schema` (empty: it conforms). `resolve` follows a `$ref`. */
export function valueProblems(schema: Schema, value: unknown, resolve: (ref: string) => Schema, at = '$'): string[] {
  if (typeof schema.$ref === 'string') return valueProblems(resolve(schema.$ref), value, resolve, at);
  const problems: string[] = [];
  if (schema.type !== undefined) {
    const types = (Array.isArray(schema.type) ? schema.type : [schema.type]) as string[];
    if (!types.some((t) => hasType(t, value)))
      problems.push(`${at}: expected ${types.join(' or ')}, got ${JSON.stringify(value)}`);
  }
  if ('const' in schema && !equal(schema.const, value))
    problems.push(`${at}: expected ${JSON.stringify(schema.const)}, got ${JSON.stringify(value)}`);
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => equal(e, value)))
    problems.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  if (typeof value === 'string') {
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value))
      problems.push(`${at}: ${JSON.stringify(value)} does not match /${schema.pattern}/`);
    const length = [...value].length;
    if (typeof schema.minLength === 'number' && length < schema.minLength)
      problems.push(`${at}: shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === 'number' && length > schema.maxLength)
      problems.push(`${at}: longer than ${schema.maxLength}`);
  }
  if (typeof value === 'number' && typeof schema.minimum === 'number' && value < schema.minimum)
    problems.push(`${at}: below ${schema.minimum}`);
  if (isObject(value)) {
    const properties = isObject(schema.properties) ? (schema.properties as Record<string, Schema>) : {};
    for (const name of (schema.required as string[] | undefined) ?? [])
      if (!(name in value)) problems.push(`${at}: missing "${name}"`);
    for (const [name, sub] of Object.entries(value)) {
      if (name in properties) problems.push(...valueProblems(properties[name]!, sub, resolve, `${at}.${name}`));
      else if (schema.additionalProperties === false) problems.push(`${at}: unexpected "${name}"`);
      else if (isObject(schema.additionalProperties))
        problems.push(...valueProblems(schema.additionalProperties, sub, resolve, `${at}.${name}`));
    }
  }
  if (Array.isArray(value) && isObject(schema.items))
    value.forEach((item, i) => problems.push(...valueProblems(schema.items as Schema, item, resolve, `${at}[${i}]`)));
  if (Array.isArray(schema.oneOf)) {
    const passing = (schema.oneOf as Schema[]).filter(
      (sub) => valueProblems(sub, value, resolve, at).length === 0,
    ).length;
    if (passing !== 1) problems.push(`${at}: matches ${passing} of the oneOf schemas, not exactly one`);
  }
  return problems;
}
