import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { errors } from '../src/errors.ts'

test('every error code is its key and is documented in the README', () => {
  const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
  for (const [key, factory] of Object.entries(errors)) {
    assert.equal(factory.code, key)
    assert.ok(readme.includes(`\`${key}\``), `${key} is documented`)
  }
})
