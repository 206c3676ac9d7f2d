/**
 * WSDL 1.1 for a SOAP-enabled flow: document/literal, one service, one port, one operation, a
 * SOAP 1.1 binding (always, even for flows that also accept 1.2) and xsd:anyType messages.
 */
import { escapeXml } from '../../common/xml.js';

export interface WsdlInput {
  readonly tenant: string;
  readonly flow: string;
  /** `soap_operation`: the operation (and element) name. */
  readonly operation: string;
  /** `soap_namespace`: the target namespace. */
  readonly namespace: string;
  /** `http` or `https`, from the request. */
  readonly scheme: string;
  /** The request's Host header (host[:port]). */
  readonly host: string;
}

/** The flow's /run address as the port location. */
export function runAddress(input: Pick<WsdlInput, 'scheme' | 'host' | 'tenant' | 'flow'>): string {
  return `${input.scheme}://${input.host}/flows/${input.tenant}/${input.flow}/run`;
}

/** Characters allowed in an XML NCName-ish identifier derived from the flow name. */
function ncName(text: string): string {
  const cleaned = text.replace(/[^A-Za-z0-9_.-]/g, '_');
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `_${cleaned}`;
}

export function buildWsdl(input: WsdlInput): string {
  const op = escapeXml(input.operation);
  const ns = escapeXml(input.namespace);
  const base = ncName(input.flow);
  const location = escapeXml(runAddress(input));
  return `<?xml version="1.0" encoding="utf-8"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/"
    xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"
    xmlns:xsd="http://www.w3.org/2001/XMLSchema"
    xmlns:tns="${ns}"
    name="${base}"
    targetNamespace="${ns}">
  <wsdl:types>
    <xsd:schema targetNamespace="${ns}" elementFormDefault="qualified">
      <xsd:element name="${op}" type="xsd:anyType"/>
      <xsd:element name="${op}Response" type="xsd:anyType"/>
    </xsd:schema>
  </wsdl:types>
  <wsdl:message name="${op}Request">
    <wsdl:part name="parameters" element="tns:${op}"/>
  </wsdl:message>
  <wsdl:message name="${op}Response">
    <wsdl:part name="parameters" element="tns:${op}Response"/>
  </wsdl:message>
  <wsdl:portType name="${base}PortType">
    <wsdl:operation name="${op}">
      <wsdl:input message="tns:${op}Request"/>
      <wsdl:output message="tns:${op}Response"/>
    </wsdl:operation>
  </wsdl:portType>
  <wsdl:binding name="${base}Binding" type="tns:${base}PortType">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <wsdl:operation name="${op}">
      <soap:operation soapAction="${op}" style="document"/>
      <wsdl:input><soap:body use="literal"/></wsdl:input>
      <wsdl:output><soap:body use="literal"/></wsdl:output>
    </wsdl:operation>
  </wsdl:binding>
  <wsdl:service name="${base}Service">
    <wsdl:port name="${base}Port" binding="tns:${base}Binding">
      <soap:address location="${location}"/>
    </wsdl:port>
  </wsdl:service>
</wsdl:definitions>
`;
}
