import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDescriptorSet } from '../../../../src/app/use-cases/proto.js';
import { outputMismatch } from '../../../../src/doors/grpc/output-shape.js';
import { greeterSet } from '../../../helpers/grpc.js';

const sayHello = parseDescriptorSet(greeterSet()).services[0]!.methods.find((m) => m.name === 'SayHello')!;

describe('flow output against a response message', () => {
  const cases: Array<[string, unknown, string | undefined]> = [
    ['a fitting object', { message: 'hi', n: '12', mood: 'HAPPY' }, undefined],
    ['numbers for int64 and unknown keys', { n: 12, extra: { any: 1 } }, undefined],
    ['null fields', { message: null }, undefined],
    ['an object for a text field', { message: { a: 1 } }, 'message: text expected'],
    ['a word for an integer', { n: 'abc' }, 'n: integer expected'],
    ['an unknown enum name', { mood: 'SAD' }, 'mood: one of MOOD_UNSPECIFIED, HAPPY, GRUMPY expected'],
    ['a list instead of an object', [{ message: 'x' }], 'output: object expected for demo.v1.HelloReply'],
  ];
  for (const [what, value, expected] of cases) {
    it(`${what} ${expected ? 'is refused' : 'fits'}`, () =>
      assert.equal(outputMismatch(sayHello.responseType, value), expected));
  }

  it('nested messages and lists are checked field by field', () => {
    const req = sayHello.requestType;
    assert.equal(outputMismatch(req, { tip: { units: 'x' } }), 'tip.units: integer expected');
    assert.equal(outputMismatch(req, { tags: 'one' }), 'tags: list expected');
    assert.equal(outputMismatch(req, { tags: ['a', {}] }), 'tags[1]: text expected');
  });
});
