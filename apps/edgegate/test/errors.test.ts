import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { errors } from '../src/errors.ts'

test('every error code is its key and is documented in the README', () => {
  const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
  for (const [key, factory] of Object.entries(errors)) {
    assert.equal(factory.code, key)
    // A table row `| code | status | ...`, however the columns are padded.
    const row = new RegExp(
      String.raw`\|\s*` + '`' + key + '`' + String.raw`\s*\|\s*` + factory.status + String.raw`\s*\|`,
    )
    assert.match(readme, row, `README documents ${key} with status ${factory.status}`)
  }
})
