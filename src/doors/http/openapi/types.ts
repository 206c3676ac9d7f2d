/**
 * The part of OpenAPI 3.1 this service's document uses, as types: enough to make a wrong field a
 * compile error, not a full model of the specification.
 */

/** A JSON Schema (2020-12) in the subset the document uses; `{}` accepts any JSON value. */
export interface JsonSchema {
  readonly $ref?: string;
  readonly type?: JsonType | readonly JsonType[];
  readonly const?: string | number | boolean | null;
  readonly enum?: readonly (string | number | boolean | null)[];
  readonly pattern?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly format?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly items?: JsonSchema;
  readonly oneOf?: readonly JsonSchema[];
  readonly description?: string;
  readonly examples?: readonly unknown[];
}

export type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null';

export interface MediaTypeObject {
  readonly schema: JsonSchema;
  readonly example?: unknown;
}

/** Keys are media types (`application/json`, `text/plain; charset=utf-8`) or ranges (`*\/*`). */
export type Content = Readonly<Record<string, MediaTypeObject>>;

export interface HeaderObject {
  readonly description: string;
  /** True when every answer of this status carries the header. */
  readonly required?: boolean;
  readonly schema: JsonSchema;
}

export interface ReferenceObject {
  readonly $ref: string;
}

export interface ResponseObject {
  readonly description: string;
  readonly headers?: Readonly<Record<string, HeaderObject | ReferenceObject>>;
  /** Absent: the answer has no body. */
  readonly content?: Content;
}

export interface ParameterObject {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header' | 'cookie';
  readonly description: string;
  readonly required?: boolean;
  readonly schema: JsonSchema;
}

export interface RequestBodyObject {
  readonly description: string;
  readonly required?: boolean;
  readonly content: Content;
}

/** One name of `components.securitySchemes` and the roles it needs (none for a bearer key). */
export type SecurityRequirement = Readonly<Record<string, readonly string[]>>;

export interface OperationObject {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly parameters?: readonly (ParameterObject | ReferenceObject)[];
  readonly requestBody?: RequestBodyObject;
  /** Status code (`200`, `4XX`) or `default` to the answer. */
  readonly responses: Readonly<Record<string, ResponseObject | ReferenceObject>>;
  /** `[]`: public. */
  readonly security: readonly SecurityRequirement[];
}

export type HttpMethod = 'get' | 'head' | 'post' | 'put' | 'patch' | 'delete' | 'options' | 'trace';

export type PathItemObject = Readonly<Partial<Record<HttpMethod, OperationObject>>> & {
  readonly parameters?: readonly (ParameterObject | ReferenceObject)[];
};

export interface SecuritySchemeObject {
  readonly type: 'http';
  readonly scheme: 'bearer';
  readonly bearerFormat?: string;
  readonly description: string;
}

export interface TagObject {
  readonly name: string;
  readonly description: string;
}

export interface OpenApiDocument {
  readonly openapi: `3.1.${number}`;
  readonly info: { readonly title: string; readonly version: string; readonly description: string };
  readonly jsonSchemaDialect?: string;
  readonly tags: readonly TagObject[];
  readonly paths: Readonly<Record<string, PathItemObject>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly parameters: Readonly<Record<string, ParameterObject>>;
    readonly headers: Readonly<Record<string, HeaderObject>>;
    readonly responses: Readonly<Record<string, ResponseObject>>;
    readonly securitySchemes: Readonly<Record<string, SecuritySchemeObject>>;
  };
}
