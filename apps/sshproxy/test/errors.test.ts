import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { errors } from '../src/errors.ts'
import { RESULTS } from '../src/gate/gate-metrics.ts'

const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')

test('every error code equals its key and is documented in the README', () => {
  for (const [key, factory] of Object.entries(errors)) {
    assert.equal(factory.code, key)
    assert.match(readme, new RegExp(`\\|\\s*\`${key}\`\\s*\\|`), `${key} is documented`)
  }
})

test('every connection result and wire error code is documented in the README', async () => {
  for (const result of RESULTS)
    assert.match(readme, new RegExp(`\\|\\s*\`${result}\`\\s*\\|`), `${result} is documented`)
  const wire = readFileSync(join(import.meta.dirname, '..', 'src', 'wire', 'wire-error.ts'), 'utf8')
  const codes = [...wire.matchAll(/\| '([a-z_]+)'/g)].map((m) => m[1]!)
  assert.ok(codes.length >= 9)
  for (const code of codes) assert.match(readme, new RegExp(`\`${code}\``), `${code} is documented`)
})
