import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { checkEntrypoint, checkPath, collisionKey, decodeEntryName } from '../src/bundles/names.ts'

test('checkPath never throws and never accepts an escaping or absolute path', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (name) => {
      const r = checkPath(name)
      if ('reason' in r) {
        assert.match(r.reason, /^[a-z_]+$/)
        assert.ok(r.detail.length > 0)
        return
      }
      assert.ok(!r.path.startsWith('/'))
      assert.ok(!r.path.split('/').some((s) => s === '..' || s === '.' || s === ''))
      assert.ok(!r.path.includes('\\'))
      assert.equal(r.path, r.path.normalize('NFC'))
    }),
    { numRuns: 2000 },
  )
})

test('decodeEntryName accepts exactly valid UTF-8 and never throws', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat(0xffff), (bytes, flags) => {
      const r = decodeEntryName(bytes, flags)
      if (typeof r === 'string') assert.deepEqual(Buffer.from(r, 'utf8'), Buffer.from(bytes))
      else assert.ok(['invalid_encoding', 'invalid_name'].includes(r.reason))
    }),
    { numRuns: 2000 },
  )
})

test('collision keys fold case and Unicode forms', () => {
  assert.equal(collisionKey('Index.HTML'), collisionKey('index.html'))
  assert.equal(collisionKey('caf\u00e9'), collisionKey('cafe\u0301'))
  assert.notEqual(collisionKey('a.txt'), collisionKey('b.txt'))
})

test('entrypoints follow the path rules and name a file', () => {
  assert.equal(checkEntrypoint('index.html'), 'index.html')
  assert.equal(checkEntrypoint('app/main.html'), 'app/main.html')
  for (const bad of ['../x.html', '/index.html', 'dir/', 'a\\b', '']) {
    const r = checkEntrypoint(bad)
    assert.equal(typeof r, 'object', bad)
  }
})
