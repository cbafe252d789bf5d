import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { errors } from '../src/errors.ts'

test('every error code is documented in the README with its status', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  for (const [key, factory] of Object.entries(errors)) {
    assert.equal(factory.code, key)
    assert.match(readme, new RegExp(`\\| \`${key}\` +\\| ${factory.status} +\\|`), `${key} documented`)
  }
})
