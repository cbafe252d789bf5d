import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '@gatehouse/kit/config.ts'
import { tempDir } from '@gatehouse/testkit'
import { fileSchema } from '../src/config.ts'
import { errors } from '../src/errors.ts'
import { RESULTS } from '../src/gate/metrics.ts'

const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')

test('every error code equals its key and is documented in the README', () => {
  for (const [key, factory] of Object.entries(errors)) {
    assert.equal(factory.code, key)
    assert.match(readme, new RegExp(`\\|\\s*\`${key}\`\\s*\\|`), `${key} is documented`)
  }
})

test('every connection result and ClientHello refusal code is documented in the README', () => {
  for (const result of RESULTS) assert.match(readme, new RegExp(`\\|\\s*\`${result}\`\\s*\\|`), `${result}`)
  const wire = readFileSync(join(import.meta.dirname, '..', 'src', 'wire', 'client-hello.ts'), 'utf8')
  const codes = [...wire.matchAll(/\| '([a-z_]+)'/g)].map((m) => m[1]!)
  assert.equal(codes.length, 7)
  for (const code of codes) assert.match(readme, new RegExp(`\`${code}\``), code)
})

test('config.example.json loads against the strict schema (its token file swapped for a real one)', (t) => {
  const dir = tempDir('tlsgate-example-')
  t.after(() => dir.remove())
  const example = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'config.example.json'), 'utf8'))
  example.control_plane.token_file = join(dir.path, 'token')
  writeFileSync(example.control_plane.token_file, 'x')
  writeFileSync(join(dir.path, 'config.json'), JSON.stringify(example))
  const loaded = loadConfig(fileSchema, { file: join(dir.path, 'config.json'), env: {}, fileRequired: true })
  assert.equal(loaded.config.control_plane.instance_id, 'tls-fra-1')
  assert.equal(loaded.config.control_plane.token, 'x')
})
