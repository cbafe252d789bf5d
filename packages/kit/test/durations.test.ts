import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { DurationError, formatDuration, parseByteSize, parseDuration } from '../src/index.ts'

describe('parseDuration', () => {
  const valid: Array<[string, number]> = [
    ['500ms', 500],
    ['30s', 30_000],
    ['15m', 900_000],
    ['12h', 43_200_000],
    ['168h', 604_800_000],
    ['1h30m', 5_400_000],
    ['1h2m3s4ms', 3_723_004],
    ['0', 0],
    ['0s', 0],
    [' 30s ', 30_000],
  ]
  for (const [text, ms] of valid) {
    test(`accepts ${JSON.stringify(text)}`, () => {
      assert.equal(parseDuration(text), ms)
    })
  }

  const invalid: Array<[string, RegExp]> = [
    ['', /empty duration/],
    ['   ', /empty duration/],
    ['1d', /^invalid duration "1d": the largest unit is h, so 1d is 24h$/],
    ['2w', /^invalid duration "2w": the largest unit is h, so 2w is 336h$/],
    // The part that did not parse is named only when it is not the whole text.
    ['soon', /^invalid duration "soon" \(use e\.g\. 500ms, 30s, 15m, 12h, 1h30m\)$/],
    ['1h30', /^invalid duration "1h30" at "30" \(use e\.g\./],
    ['1m1h', /largest to smallest/],
    ['1h1h', /largest to smallest/],
    ['-5s', /invalid duration "-5s"/],
    ['5', /invalid duration "5"/],
    ['1h 30m', /invalid duration "1h 30m"/],
    ['1.5h', /invalid duration/],
    ['30S', /invalid duration/],
    ['99999999999999999999h', /too large/],
  ]
  for (const [text, message] of invalid) {
    test(`refuses ${JSON.stringify(text)} with a clear error`, () => {
      assert.throws(
        () => parseDuration(text),
        (err: unknown) => {
          assert.ok(err instanceof DurationError)
          assert.match(err.message, message)
          return true
        },
      )
    })
  }

  test('errors suggest the accepted syntax', () => {
    assert.throws(() => parseDuration('1x'), /use e\.g\. 500ms, 30s, 15m, 12h, 1h30m/)
  })
})

describe('formatDuration', () => {
  test('renders largest units first', () => {
    assert.equal(formatDuration(0), '0s')
    assert.equal(formatDuration(500), '500ms')
    assert.equal(formatDuration(5_400_000), '1h30m')
    assert.equal(formatDuration(604_800_000), '168h')
    assert.equal(formatDuration(3_723_004), '1h2m3s4ms')
  })

  test('refuses negative and fractional values', () => {
    assert.throws(() => formatDuration(-1), TypeError)
    assert.throws(() => formatDuration(1.5), TypeError)
    assert.throws(() => formatDuration(Number.NaN), TypeError)
  })

  test('property: format then parse gives back the same milliseconds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (ms) => {
        assert.equal(parseDuration(formatDuration(ms)), ms)
      }),
    )
  })

  test('property: formatDuration(parseDuration(x)) parses back to the same ms', () => {
    const text = fc
      .tuple(
        fc.option(fc.nat({ max: 10_000 })),
        fc.option(fc.nat({ max: 10_000 })),
        fc.option(fc.nat({ max: 10_000 })),
        fc.option(fc.nat({ max: 10_000 })),
      )
      .filter((parts) => parts.some((p) => p !== null))
      .map(([h, m, s, ms]) =>
        [
          h === null ? '' : `${h}h`,
          m === null ? '' : `${m}m`,
          s === null ? '' : `${s}s`,
          ms === null ? '' : `${ms}ms`,
        ].join(''),
      )
    fc.assert(
      fc.property(text, (x) => {
        const ms = parseDuration(x)
        assert.equal(parseDuration(formatDuration(ms)), ms)
      }),
    )
  })
})

describe('parseByteSize', () => {
  const valid: Array<[string, number]> = [
    ['0', 0],
    ['1048576', 1_048_576],
    ['512KiB', 524_288],
    ['25MiB', 26_214_400],
    ['1GiB', 1_073_741_824],
    ['1GB', 1_000_000_000],
    ['10kb', 10_000],
    ['3 MB', 3_000_000],
    ['7b', 7],
  ]
  for (const [text, bytes] of valid) {
    test(`accepts ${JSON.stringify(text)}`, () => {
      assert.equal(parseByteSize(text), bytes)
    })
  }
  for (const text of ['', '1.5MiB', '-1', '10TB', 'MiB', '1 2', '99999999999GiB']) {
    test(`refuses ${JSON.stringify(text)}`, () => {
      assert.throws(() => parseByteSize(text), DurationError)
    })
  }
})
