import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateToken, hashToken, safeEqual, sha256Hex, verifyToken } from '../src/index.ts'

describe('secrets', () => {
  test('generateToken gives 43 base64url characters', () => {
    const token = generateToken()
    assert.equal(token.length, 43)
    assert.match(token, /^[A-Za-z0-9_-]{43}$/)
    assert.equal(Buffer.from(token, 'base64url').length, 32)
  })

  test('generateToken never repeats', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 1000; i++) seen.add(generateToken())
    assert.equal(seen.size, 1000)
  })

  test('generateToken refuses fewer than 16 bytes', () => {
    assert.throws(() => generateToken(8), TypeError)
    assert.throws(() => generateToken(16.5), TypeError)
  })

  test('hashToken is SHA-256 hex', () => {
    assert.equal(hashToken('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    assert.equal(sha256Hex(Buffer.from('abc')), hashToken('abc'))
  })

  test('verifyToken accepts the right token and refuses others', () => {
    const token = generateToken()
    const stored = hashToken(token)
    assert.equal(verifyToken(token, stored), true)
    assert.equal(verifyToken(generateToken(), stored), false)
    assert.equal(verifyToken(`${token}x`, stored), false)
  })

  test('verifyToken refuses malformed stored hashes without throwing', () => {
    const token = generateToken()
    const stored = hashToken(token)
    assert.equal(verifyToken(token, ''), false)
    assert.equal(verifyToken(token, stored.slice(1)), false)
    assert.equal(verifyToken(token, stored.toUpperCase()), false)
    assert.equal(verifyToken(token, `${stored}00`), false)
    assert.equal(verifyToken(token, 'z'.repeat(64)), false)
  })

  test('safeEqual compares contents of any length', () => {
    assert.equal(safeEqual('abc', 'abc'), true)
    assert.equal(safeEqual('abc', 'abd'), false)
    assert.equal(safeEqual('abc', 'abcd'), false)
    assert.equal(safeEqual('', ''), true)
    assert.equal(safeEqual(Buffer.from('abc'), 'abc'), true)
    assert.equal(safeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3])), false)
  })
})
