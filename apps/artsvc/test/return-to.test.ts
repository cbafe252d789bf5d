import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { safeReturnTo } from '../src/auth/return-to.ts'

const ORIGIN = 'https://artifacts.example'

describe('safeReturnTo', () => {
  test('keeps same-origin paths, queries and fragments', () => {
    assert.equal(safeReturnTo('/a/X?version=2#top', ORIGIN), '/a/X?version=2#top')
    assert.equal(safeReturnTo('https://artifacts.example/a/X', ORIGIN), '/a/X')
    assert.equal(safeReturnTo('a/X', ORIGIN), '/a/X')
  })
  test('anything that would leave the origin goes to /', () => {
    for (const v of [
      '//evil.example',
      '/\t/evil.example',
      '/\n/evil.example',
      '\\\\evil.example',
      '/\\evil.example',
      'http://artifacts.example/',
      'https://artifacts.example.evil/',
      'javascript:alert(1)',
      'data:text/html,x',
      undefined,
      '',
    ])
      assert.equal(safeReturnTo(v, ORIGIN), '/', JSON.stringify(v))
  })
  test('whatever the input, the browser resolves the answer to the public origin, with no control character', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.string({ unit: 'binary' })), (v) => {
        const out = safeReturnTo(v, ORIGIN)
        assert.equal(new URL(out, ORIGIN).origin, ORIGIN)
        assert.ok(out.startsWith('/') && !out.startsWith('//'), out)
        assert.doesNotMatch(out, /[\u0000-\u001f\u007f]/)
      }),
    )
  })
})
