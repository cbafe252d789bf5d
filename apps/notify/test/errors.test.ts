import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { kitErrors } from '@gatehouse/kit'
import { errors } from '../src/errors.ts'

test('every error code is a stable snake_case key and is documented in the README', () => {
  const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
  for (const [key, factory] of Object.entries({ ...kitErrors, ...errors })) {
    assert.equal(factory.code, key)
    assert.ok(readme.includes(`\`${key}\``), `README.md does not document ${key}`)
  }
})
