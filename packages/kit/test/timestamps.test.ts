import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  formatTimestampMicros,
  formatTimestampMillis,
  parseTimestampMicros,
  parseTimestampMillis,
  TIMESTAMP_PATTERN,
} from '../src/index.ts'

const NEW_YEAR = Date.UTC(2026, 0, 1)

describe('RFC 3339 timestamps', () => {
  test('every spelling of UTC is the same instant', () => {
    for (const t of [
      '2026-01-01T00:00:00Z',
      '2026-01-01T00:00:00z',
      '2026-01-01t00:00:00Z',
      '2026-01-01T00:00:00+00:00',
      '2026-01-01T00:00:00-00:00',
      '2026-01-01T00:00:00.000000000Z',
    ])
      assert.equal(parseTimestampMillis(t), NEW_YEAR, t)
  })
  test('other offsets are converted to UTC', () => {
    assert.equal(parseTimestampMillis('2026-01-01T01:30:00+01:30'), NEW_YEAR)
    assert.equal(parseTimestampMillis('2025-12-31T19:00:00-05:00'), NEW_YEAR)
    assert.equal(parseTimestampMicros('2026-01-01T00:00:00.123456789+00:00'), NEW_YEAR * 1000 + 123456)
  })
  test('not RFC 3339, or not a real instant, is undefined', () => {
    for (const t of [
      '2026-01-01',
      '2026-01-01 00:00:00Z',
      '2026-01-01T00:00:00',
      '2026-02-30T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T00:00:60Z',
      '2026-01-01T00:00:00+24:00',
      '2026-01-01T00:00:00+0000',
      '1969-12-31T23:59:59Z',
      '1970-01-01T00:30:00+01:00',
      '2026-01-01T00:00:00.Z',
    ])
      assert.equal(parseTimestampMillis(t), undefined, t)
  })
  test('the schema pattern agrees with the parser on the form', () => {
    const re = new RegExp(TIMESTAMP_PATTERN)
    for (const t of ['2026-01-01T00:00:00z', '2026-01-01T00:00:00+00:00', '2026-01-01t00:00:00.5-07:00'])
      assert.match(t, re)
    assert.doesNotMatch('2026-01-01T00:00:00', re)
  })
  test('written in UTC with Z, and read back to the same instant whatever the offset', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 86_400_000, max: 4_102_444_800_000 }),
        fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
        (ms, offset) => {
          const utc = formatTimestampMillis(ms)
          assert.match(utc, /Z$/)
          assert.equal(parseTimestampMillis(utc), ms)
          const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23)
          const sign = offset < 0 ? '-' : '+'
          const abs = Math.abs(offset)
          const text = `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
          assert.equal(parseTimestampMillis(text), ms, text)
        },
      ),
    )
    assert.equal(formatTimestampMicros(NEW_YEAR * 1000 + 7), '2026-01-01T00:00:00.000007Z')
  })
  test('the form every writer sends, read by position, reads as the general parser reads it', () => {
    // Any digits in every digit position (months 00-99, February 29-31, years before 1970...),
    // against the same instant spelled with an offset or a lower-case z (the general parser).
    const digits = (n: number) =>
      fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(''))
    const likely = fc.oneof(fc.constantFrom('1969', '1970', '2000', '2024', '2026', '2100'), digits(4))
    const month = fc.oneof(fc.constantFrom('00', '02', '04', '12', '13'), digits(2))
    const day = fc.oneof(fc.constantFrom('00', '28', '29', '30', '31', '32'), digits(2))
    fc.assert(
      fc.property(likely, month, day, digits(2), digits(2), digits(2), digits(3), (y, mo, d, h, mi, s, f) => {
        const text = `${y}-${mo}-${d}T${h}:${mi}:${s}.${f}Z`
        const general = parseTimestampMicros(`${text.slice(0, 23)}+00:00`)
        assert.equal(parseTimestampMicros(text), general, text)
        assert.equal(parseTimestampMicros(`${text.slice(0, 23)}z`), general, text)
      }),
      { numRuns: 2000 },
    )
    // Any characters near a digit's code (':' and '/' around '0'-'9') and the separators anywhere.
    const char = fc.oneof(fc.integer({ min: 0, max: 9 }).map(String), fc.constantFrom(':', '/', '-', 'T', '.', 'Z'))
    fc.assert(
      fc.property(fc.array(char, { minLength: 23, maxLength: 23 }), fc.nat(22), (chars, at) => {
        // A base year from the 2900s on: a non-digit in its last two places must not read as a
        // smaller year (it once did: 30:6 read as 2000).
        const shaped = `${at % 2 ? '2026' : '3099'}-11-29T12:34:56.789`.split('')
        shaped[at] = chars[at]!
        for (const head of [chars.join(''), shaped.join('')])
          assert.equal(parseTimestampMicros(`${head}Z`), parseTimestampMicros(`${head}z`), head)
      }),
      { numRuns: 2000 },
    )
    for (const ms of [0, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2100, 1, 28), NEW_YEAR + 1])
      assert.equal(parseTimestampMicros(new Date(ms).toISOString()), ms * 1000)
    assert.equal(parseTimestampMicros('2026-01-01T00:00:00.000 '), undefined)
    assert.equal(parseTimestampMicros('2026-01-01T00:00:00,000Z'), undefined)
    assert.equal(parseTimestampMicros('30:6-01-01T00:00:00.000Z'), undefined)
  })
  test('arbitrary text never throws', () => {
    fc.assert(fc.property(fc.string(), (s) => void parseTimestampMicros(s)))
  })
})
