/** An XML value kept as XML through a flow (from `application/xml` input, SOAP bodies or XML `ntd`). */

export class XmlValue {
  /** @param xml the serialised document or fragment; @param root its root element's local name */
  constructor(
    readonly xml: string,
    readonly root: string,
  ) {}

  toString(): string {
    return this.xml;
  }

  /** Nested inside a JSON answer, an XML value is written as its XML text. */
  toJSON(): string {
    return this.xml;
  }
}

export function isXmlValue(value: unknown): value is XmlValue {
  return value instanceof XmlValue;
}
