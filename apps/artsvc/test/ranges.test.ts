/** The content origin's byte ranges (src/content/ranges.ts) as a function: RFC 9110's rules. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { requestedRange } from '../src/content/ranges.ts'

const ETAG = '"abc"'

test('one range of each form; whole file for what is not one satisfiable range of this version', () => {
  assert.deepEqual(requestedRange('bytes=0-9', undefined, 100, ETAG), { start: 0, end: 9 })
  assert.deepEqual(requestedRange('bytes=90-', undefined, 100, ETAG), { start: 90, end: 99 })
  assert.deepEqual(requestedRange('bytes=-10', undefined, 100, ETAG), { start: 90, end: 99 })
  assert.deepEqual(requestedRange('bytes=-500', undefined, 100, ETAG), { start: 0, end: 99 })
  assert.deepEqual(requestedRange('bytes=50-5000', undefined, 100, ETAG), { start: 50, end: 99 })
  assert.equal(requestedRange('bytes=100-', undefined, 100, ETAG), 'unsatisfiable')
  assert.equal(requestedRange('bytes=-0', undefined, 100, ETAG), 'unsatisfiable')
  assert.equal(requestedRange('bytes=0-', undefined, 0, ETAG), 'unsatisfiable')
  for (const whole of [undefined, 'bytes=0-1,3-4', 'bytes=-', 'bytes=9-2', 'items=0-1', 'bytes=a-b', 'bytes 0-1']) {
    assert.equal(requestedRange(whole, undefined, 100, ETAG), undefined, whole)
  }
  assert.equal(requestedRange('bytes=0-1', '"other"', 100, ETAG), undefined)
  assert.equal(requestedRange('bytes=0-1', 'Wed, 21 Oct 2015 07:28:00 GMT', 100, ETAG), undefined)
  assert.deepEqual(requestedRange('bytes=0-1', ETAG, 100, ETAG), { start: 0, end: 1 })
})

test('property: a range answered always lies inside the file and is what was asked, clipped at its end', () => {
  fc.assert(
    fc.property(fc.nat(10_000), fc.nat(20_000), fc.nat(20_000), (size, a, b) => {
      const r = requestedRange(`bytes=${a}-${b}`, undefined, size, ETAG)
      if (b < a) return assert.equal(r, undefined)
      if (a >= size) return assert.equal(r, 'unsatisfiable')
      assert.deepEqual(r, { start: a, end: Math.min(b, size - 1) })
    }),
  )
})
