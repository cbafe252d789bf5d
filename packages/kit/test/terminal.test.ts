import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { escapeTerminal, hasControlCharacter, terminalJson } from '../src/index.ts'

describe('escapeTerminal', () => {
  test('escape sequences, line breaks and overrides become visible text', () => {
    assert.equal(escapeTerminal('evil\u001b[2J\u001b]52;c;Zm9v\u0007'), 'evil\\e[2J\\e]52;c;Zm9v\\x07')
    assert.equal(escapeTerminal('a\r\nb\tc'), 'a\\r\\nb\\tc')
    assert.equal(escapeTerminal('\u009b31m \u202eabc \u0000'), '\\x9b31m \\u202eabc \\x00')
    assert.equal(escapeTerminal('ops laptop — Zoë 日本'), 'ops laptop — Zoë 日本')
  })
  test('the output never holds a control character, and plain text is unchanged', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const out = escapeTerminal(s)
        assert.equal(hasControlCharacter(out), false)
        if (!hasControlCharacter(s)) assert.equal(out, s)
      }),
    )
  })
})

describe('terminalJson', () => {
  test('is the same JSON, with nothing a terminal would act on', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, text) => {
        for (const v of [value, { text }]) {
          const out = terminalJson(v, 2)
          assert.deepEqual(JSON.parse(out), JSON.parse(JSON.stringify(v)))
          assert.equal(hasControlCharacter(out.replaceAll('\n', '')), false)
        }
      }),
    )
    assert.equal(terminalJson({ label: 'a\u009bb\u001b' }), '{"label":"a\\u009bb\\u001b"}')
  })
})
