import assert from 'node:assert/strict'
import { test } from 'node:test'
import { expiryOf } from '../src/cli/expiry.ts'
import { UsageError } from '../src/cli/program.ts'

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0)

test('--expires-in counts from now; --expires-at is read with any offset and written in UTC', () => {
  assert.equal(expiryOf({ expiresIn: '168h' }, NOW), '2026-12-08T12:00:00.000Z')
  assert.equal(expiryOf({ expiresIn: '1m' }, NOW), '2026-12-01T12:01:00.000Z')
  assert.equal(expiryOf({ expiresAt: '2027-01-31T00:00:00+01:00' }, NOW), '2027-01-30T23:00:00.000Z')
  assert.equal(expiryOf({}, NOW), undefined, 'neither: it never expires')
})

test('a bad, short, past or doubled expiry is a usage error naming the flag', () => {
  const cases: [Parameters<typeof expiryOf>[0], RegExp][] = [
    [{ expiresIn: '7d' }, /^--expires-in: invalid duration "7d"/],
    [{ expiresIn: '30s' }, /^--expires-in must be at least 1m, got "30s"$/],
    [{ expiresIn: '0' }, /^--expires-in must be at least 1m/],
    [{ expiresAt: 'tomorrow' }, /^--expires-at must be an RFC 3339 time such as .*, got "tomorrow"$/],
    [{ expiresAt: '2026-02-30T00:00:00Z' }, /^--expires-at must be an RFC 3339 time/],
    [{ expiresAt: '2026-12-01T12:00:00Z' }, /^--expires-at 2026-12-01T12:00:00Z is in the past$/],
    [{ expiresIn: '1h', expiresAt: '2027-01-01T00:00:00Z' }, /^give --expires-in or --expires-at, not both$/],
  ]
  for (const [options, message] of cases) {
    assert.throws(
      () => expiryOf(options, NOW),
      (e: unknown) => e instanceof UsageError && message.test(e.message),
      JSON.stringify(options),
    )
  }
})
