import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SoapEnvelopeError } from '../../common/errors.js';
import { SOAP_NS } from '../../common/soap-envelope.js';
import { parseXmlValue, xmlToJson } from '../../common/xml.js';
import { XmlValue } from '../../common/xml-value.js';
import { detectSoap, parseSoapRequest, readSoapRequest, SOAP_SNIFF_BYTES } from './request.js';
import { buildSoapAnswer, buildSoapFault, faultFromContext, RAW_CONTENT_NS, soapFaultStatus } from './response.js';

const env11 = (body: string, prefix = 'soap') =>
  `<?xml version="1.0"?><${prefix}:Envelope xmlns:${prefix}="${SOAP_NS['1.1']}" xmlns:m="urn:shop"><${prefix}:Header/><${prefix}:Body>${body}</${prefix}:Body></${prefix}:Envelope>`;
const env12 = (body: string) =>
  `<env:Envelope xmlns:env="${SOAP_NS['1.2']}"><env:Body>${body}</env:Body></env:Envelope>`;

test('SOAP is detected by content type plus a SOAPAction header or an early Envelope element', () => {
  const body = env11('<m:GetPrice><m:Item>apple</m:Item></m:GetPrice>');
  assert.deepEqual(detectSoap('text/xml; charset=utf-8', '"urn:GetPrice"', '<x/>'), {
    version: '1.1',
    action: 'urn:GetPrice',
  });
  assert.deepEqual(detectSoap('text/xml', undefined, body), { version: '1.1', action: undefined });
  assert.deepEqual(detectSoap('application/soap+xml; action="urn:a"', undefined, env12('<a/>')), {
    version: '1.2',
    action: 'urn:a',
  });
  // 1.2 namespace with a text/xml content type selects 1.2
  assert.equal(detectSoap('text/xml', undefined, env12('<a/>'))?.version, '1.2');
  // a prefix-less Envelope is found too
  assert.ok(detectSoap('text/xml', undefined, `<Envelope xmlns="${SOAP_NS['1.1']}"><Body/></Envelope>`));
});

test('a request without SOAP content type, or without SOAPAction and Envelope, is not SOAP', () => {
  assert.equal(detectSoap('application/json', '"x"', env11('<a/>')), undefined);
  assert.equal(detectSoap('application/xml', undefined, env11('<a/>')), undefined);
  assert.equal(detectSoap(undefined, '"x"', env11('<a/>')), undefined);
  assert.equal(detectSoap('text/xml', undefined, '<order><id>1</id></order>'), undefined);
  // an Envelope past the 512-byte window does not count
  const late = `<wrapper>${' '.repeat(SOAP_SNIFF_BYTES)}<Envelope/></wrapper>`;
  assert.equal(detectSoap('text/xml', undefined, Buffer.from(late)), undefined);
});

test('the flow receives the Body content as an XML value carrying the namespaces it uses', () => {
  const body = env11('<m:GetPrice><m:Item>apple</m:Item></m:GetPrice>', 'S');
  const req = parseSoapRequest(detectSoap('text/xml', '"urn:GetPrice"', body)!, Buffer.from(body));
  assert.equal(req.version, '1.1');
  assert.equal(req.action, 'urn:GetPrice');
  assert.ok(req.body instanceof XmlValue);
  assert.equal(req.body.root, 'GetPrice');
  assert.equal(req.body.xml, '<m:GetPrice xmlns:m="urn:shop"><m:Item>apple</m:Item></m:GetPrice>');
  // the extracted value is a standalone, well-formed document
  assert.deepEqual(xmlToJson(req.body.xml), { Item: 'apple' });
});

test('a SOAP 1.2 request is read prefix-agnostically and an empty Body gives null', () => {
  const b = env12('<q:Ping xmlns:q="urn:q"/>');
  const req = parseSoapRequest(detectSoap('application/soap+xml', undefined, b)!, b);
  assert.equal(req.version, '1.2');
  assert.equal(req.body?.root, 'Ping');
  const empty = env12('');
  assert.equal(parseSoapRequest(detectSoap('application/soap+xml', undefined, empty)!, empty).body, null);
});

test('a malformed envelope is a SoapEnvelopeError (400) of the detected version', () => {
  const cases = [
    '<soap:Envelope xmlns:soap="x"><soap:Body>',
    '<Envelope><Header/></Envelope>',
    '<Order/>',
    env11('just text'),
    `<!DOCTYPE x>${env11('<a/>')}`,
  ];
  for (const body of cases) {
    assert.throws(
      () => parseSoapRequest({ version: '1.2', action: 'a' }, body),
      (err: unknown) =>
        err instanceof SoapEnvelopeError &&
        err.status === 400 &&
        err.soapVersion === '1.2' &&
        /malformed SOAP envelope/.test(err.message),
      body,
    );
  }
});

test('a successful XML output is wrapped in a 1.1 envelope with text/xml', () => {
  const a = buildSoapAnswer(
    '1.1',
    new XmlValue('<?xml version="1.0"?><r:PriceResponse xmlns:r="urn:r"><p>3</p></r:PriceResponse>', 'PriceResponse'),
  );
  assert.equal(a.contentType, 'text/xml; charset=utf-8');
  assert.deepEqual(a.headers, {});
  assert.match(a.body, /<soap:Body><r:PriceResponse xmlns:r="urn:r"><p>3<\/p><\/r:PriceResponse><\/soap:Body>/);
  assert.equal(parseXmlValue(a.body).root, 'Envelope');
});

test('a non-XML output is escaped text in a raw-content element and flagged; 1.2 uses application/soap+xml', () => {
  const a = buildSoapAnswer('1.2', { a: '<b>&' });
  assert.equal(a.contentType, 'application/soap+xml; charset=utf-8');
  assert.deepEqual(a.headers, { 'X-Svc-Soap-Warning': 'non-xml-output' });
  assert.ok(a.body.includes(SOAP_NS['1.2']));
  assert.ok(
    a.body.includes(`<RawContent xmlns="${RAW_CONTENT_NS}">{&quot;a&quot;:&quot;&lt;b&gt;&amp;&quot;}</RawContent>`),
  );
  assert.equal(buildSoapAnswer('1.1', 'plain').headers['X-Svc-Soap-Warning'], 'non-xml-output');
  assert.deepEqual(buildSoapAnswer('1.1', null).headers, {});
});

test('a 1.1 fault has faultcode/faultstring and defaults to soap:Server / soap:Client', () => {
  const f = buildSoapFault('1.1', { errorStatus: 502, message: 'flow execution failed' });
  assert.equal(f.status, 500);
  assert.equal(f.contentType, 'text/xml; charset=utf-8');
  assert.match(
    f.body,
    /<soap:Fault><faultcode>soap:Server<\/faultcode><faultstring>flow execution failed<\/faultstring><\/soap:Fault>/,
  );
  assert.deepEqual(xmlToJson(f.body), {
    Body: { Fault: { faultcode: 'soap:Server', faultstring: 'flow execution failed' } },
  });
  assert.match(buildSoapFault('1.1', { errorStatus: 400, message: 'x', malformedEnvelope: true }).body, /soap:Client/);
});

test('a 1.2 fault has Code/Value and Reason/Text; ctx fault code and string win', () => {
  const f = buildSoapFault('1.2', {
    errorStatus: 422,
    message: 'amount must be positive',
    faultCode: 'app:Invalid',
    faultString: 'bad <amount>',
  });
  assert.equal(f.status, 422);
  assert.equal(f.contentType, 'application/soap+xml; charset=utf-8');
  const fault = (xmlToJson(f.body) as { Body: { Fault: Record<string, unknown> } }).Body.Fault;
  assert.deepEqual(fault.Code, { Value: 'soap:Sender', Subcode: { Value: 'app:Invalid' } });
  assert.deepEqual(fault.Reason, { Text: { '#text': 'bad <amount>', '@lang': 'en' } });
  const std = buildSoapFault('1.2', { errorStatus: 500, message: 'm', faultCode: 'Receiver' });
  assert.match(std.body, /<soap:Code><soap:Value>soap:Receiver<\/soap:Value><\/soap:Code>/);
  const c11 = buildSoapFault('1.1', { errorStatus: 500, message: 'm', faultCode: 'Client', faultString: 'nope' });
  assert.match(c11.body, /<faultcode>soap:Client<\/faultcode><faultstring>nope<\/faultstring>/);
});

test("a standard code is written in the client's version and the envelope's prefix, whoever named it", () => {
  const code11 = (faultCode: string) =>
    /<faultcode>([^<]*)<\/faultcode>/.exec(
      buildSoapFault('1.1', { errorStatus: 502, message: 'm', faultCode }).body,
    )![1];
  const code12 = (faultCode: string) =>
    /<soap:Code>(.*)<\/soap:Code>/.exec(buildSoapFault('1.2', { errorStatus: 502, message: 'm', faultCode }).body)![1];
  // A SOAP 1.2 backend's Fault relayed to a 1.1 client, and the other way round.
  assert.equal(code11('soap:Receiver'), 'soap:Server');
  assert.equal(code11('env:Sender'), 'soap:Client');
  assert.equal(code11('SOAP-ENV:Server'), 'soap:Server');
  assert.equal(code12('SOAP-ENV:Server'), '<soap:Value>soap:Receiver</soap:Value>');
  assert.equal(code12('Client'), '<soap:Value>soap:Sender</soap:Value>');
  assert.equal(code12('env:MustUnderstand'), '<soap:Value>soap:MustUnderstand</soap:Value>');
  // The application's own codes are kept as given.
  assert.equal(code11('app:Invalid'), 'app:Invalid');
  assert.equal(
    code12('app:Invalid'),
    '<soap:Value>soap:Receiver</soap:Value><soap:Subcode><soap:Value>app:Invalid</soap:Value></soap:Subcode>',
  );
});

test('a fault handler output travels as detail, and faults carry no flow headers', () => {
  const f = buildSoapFault('1.1', { errorStatus: 502, message: 'm', detail: new XmlValue('<why>down</why>', 'why') });
  assert.match(f.body, /<detail><why>down<\/why><\/detail>/);
  assert.deepEqual(f.headers, {});
  assert.match(
    buildSoapFault('1.2', { errorStatus: 502, message: 'm', detail: 'text & more' }).body,
    /<soap:Detail>text &amp; more<\/soap:Detail>/,
  );
});

test('the fault-status table: 1.1 is 500 always; 1.2 maps each row; overrides and malformed envelopes win', () => {
  const rows: [number, number][] = [
    [400, 400], // syntactic rule
    [422, 422], // semantic rule
    [502, 502], // failed effect
    [409, 409], // correlation conflict
    [503, 503], // state unavailable
    [500, 500], // flow defect
    [404, 500], // otherwise
    [413, 500],
  ];
  for (const [errorStatus, v12] of rows) {
    assert.equal(soapFaultStatus('1.1', { errorStatus }), 500, `1.1 ${errorStatus}`);
    assert.equal(soapFaultStatus('1.2', { errorStatus }), v12, `1.2 ${errorStatus}`);
  }
  for (const v of ['1.1', '1.2'] as const) {
    assert.equal(soapFaultStatus(v, { errorStatus: 502, responseStatus: 299 }), 299);
    assert.equal(soapFaultStatus(v, { errorStatus: 500, malformedEnvelope: true }), 400);
  }
});

test('readSoapRequest detects and unwraps in one call, and leaves non-SOAP requests alone', () => {
  const body = env11('<m:GetPrice/>');
  assert.equal(readSoapRequest('text/xml', undefined, body)?.body?.root, 'GetPrice');
  assert.equal(readSoapRequest('application/xml', undefined, body), undefined);
  assert.throws(() => readSoapRequest('text/xml', '"a"', 'not xml'), SoapEnvelopeError);
});

test('faultFromContext takes the code and string the flow wrote into ctx, and the status from the table', () => {
  const f = faultFromContext(
    '1.2',
    { status: 409, message: 'correlation already open' },
    { soap_fault_code: 'Sender', soap_fault_string: 'dup' },
  );
  assert.equal(f.status, 409);
  assert.match(f.body, /<soap:Value>soap:Sender<\/soap:Value>.*<soap:Text xml:lang="en">dup<\/soap:Text>/);
  const g = faultFromContext('1.1', { status: 422, message: 'amount must be positive' }, undefined, {
    responseStatus: 200,
  });
  assert.equal(g.status, 200);
  assert.match(g.body, /<faultcode>soap:Client<\/faultcode><faultstring>amount must be positive<\/faultstring>/);
});
