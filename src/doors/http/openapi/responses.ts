/**
 * The one builder of error answers: a description, the default error body `{"ok":false,"error":...}`
 * as JSON with what `error` may say, the answer's headers, and any other content type beside it
 * (SOAP Faults). Components and routes build every such answer here, so they cannot drift apart.
 */
import type { Content, JsonSchema, ResponseObject } from './types.js';

export const json = (schema: JsonSchema): Content => ({ 'application/json': { schema } });

/** The default error body, `{"ok":false,"error":...}`, with what `error` may say on this answer. */
export function errorBody(error: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: ['ok', 'error'],
    properties: { ok: { const: false }, error },
    additionalProperties: false,
  };
}

/** What `error` says: one fixed text (`const`) or one of several (`enum`). */
export function messageSchema(messages: readonly string[]): JsonSchema {
  return messages.length === 1 ? { const: messages[0]! } : { enum: messages };
}

export interface ErrorAnswerParts {
  readonly headers?: ResponseObject['headers'];
  /** Content types answered beside the JSON error body (SOAP Faults), after it. */
  readonly also?: Content;
}

/**
 * An error answer. `error` is the schema of the `error` field, or the fixed texts it may be.
 * Keys in the order the document has always had them: description, headers, content.
 */
export function errorAnswer(
  description: string,
  error: JsonSchema | readonly string[],
  parts: ErrorAnswerParts = {},
): ResponseObject {
  const schema = isMessageList(error) ? messageSchema(error) : error;
  return {
    description,
    ...(parts.headers === undefined ? {} : { headers: parts.headers }),
    content: { ...json(errorBody(schema)), ...parts.also },
  };
}

function isMessageList(error: JsonSchema | readonly string[]): error is readonly string[] {
  return Array.isArray(error);
}
