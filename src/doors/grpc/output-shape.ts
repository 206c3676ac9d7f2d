/**
 * Checks a flow's JSON output against a response message before protobufjs `fromObject`, which
 * would otherwise coerce silently (an object into "[object Object]", "abc" into 0).
 * Keys the message does not define are ignored; `null` means "not set".
 */
import protobuf from 'protobufjs';

const INTEGER_TYPES = new Set([
  'int32',
  'uint32',
  'sint32',
  'fixed32',
  'sfixed32',
  'int64',
  'uint64',
  'sint64',
  'fixed64',
  'sfixed64',
]);
const INTEGER_TEXT = /^-?\d+$/;

/** The first mismatch as `field.path: expected ...`, or undefined when the output fits. */
export function outputMismatch(type: protobuf.Type, value: unknown, path = ''): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return `${path || 'output'}: object expected for ${type.fullName.slice(1)}`;
  for (const [key, v] of Object.entries(value)) {
    const field = type.fields[key];
    if (field === undefined || v === null || v === undefined) continue;
    const at = path ? `${path}.${key}` : key;
    if (field.map) {
      if (typeof v !== 'object' || Array.isArray(v)) return `${at}: object (map) expected`;
      for (const [k, item] of Object.entries(v)) {
        const problem = valueMismatch(field, item, `${at}.${k}`);
        if (problem) return problem;
      }
    } else if (field.repeated) {
      if (!Array.isArray(v)) return `${at}: list expected`;
      for (const [i, item] of v.entries()) {
        const problem = valueMismatch(field, item, `${at}[${i}]`);
        if (problem) return problem;
      }
    } else {
      const problem = valueMismatch(field, v, at);
      if (problem) return problem;
    }
  }
  return undefined;
}

function valueMismatch(field: protobuf.Field, v: unknown, at: string): string | undefined {
  field.resolve();
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) return outputMismatch(rt, v, at);
  if (rt instanceof protobuf.Enum) {
    if (typeof v === 'string' && v in rt.values) return undefined;
    if (typeof v === 'number' && Number.isInteger(v)) return undefined;
    return `${at}: one of ${Object.keys(rt.values).join(', ')} expected`;
  }
  if (INTEGER_TYPES.has(field.type)) {
    return (typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && INTEGER_TEXT.test(v))
      ? undefined
      : `${at}: integer expected`;
  }
  switch (field.type) {
    case 'double':
    case 'float':
      return typeof v === 'number' || (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)))
        ? undefined
        : `${at}: number expected`;
    case 'bool':
      return typeof v === 'boolean' ? undefined : `${at}: true or false expected`;
    case 'string':
      return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
        ? undefined
        : `${at}: text expected`;
    case 'bytes':
      return typeof v === 'string' ? undefined : `${at}: base64 text expected`;
  }
  return undefined;
}
