/**
 * Property tests for the small parsers of issue #21's outside input: user names derived
 * from identity-provider claims, sign-in return paths, desktop codes and key material.
 * Never a crash, and the output always satisfies the rule it exists for.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { newUserCode, normalizeUserCode } from '../src/desktop/service.ts'
import { USERNAME } from '../src/names.ts'
import { usernameBase } from '../src/oidc/provision.ts'
import { safeReturnTo } from '../src/oidc/routes.ts'
import { parseKeyMaterial } from '../src/settings/action-key.ts'

const anyText = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }))

test('a user name from provider claims is always a valid user name', () => {
  fc.assert(
    fc.property(
      fc.record(
        {
          sub: fc.string({ minLength: 1 }),
          preferred_username: fc.oneof(anyText, fc.integer(), fc.constant(null)),
          email: fc.oneof(anyText, fc.emailAddress()),
          name: anyText,
        },
        { requiredKeys: ['sub'] },
      ),
      (claims) => {
        const name = usernameBase(claims)
        assert.match(name, USERNAME)
        assert.ok(name.length <= 48)
      },
    ),
    { numRuns: 2000 },
  )
  assert.equal(usernameBase({ sub: 'x', preferred_username: 'Ünïcode User' }), 'unicode-user')
  assert.equal(usernameBase({ sub: 'x', email: 'Bob.Smith@example.org' }), 'bob.smith')
  assert.equal(usernameBase({ sub: 'x', preferred_username: '///' }), 'user')
})

test('a return path is always a path on this origin', () => {
  fc.assert(
    fc.property(fc.oneof(anyText, fc.webUrl(), fc.webPath()), (text) => {
      const out = safeReturnTo(text)
      assert.ok(out.startsWith('/'))
      assert.ok(!out.startsWith('//') && !out.startsWith('/\\'))
      assert.equal(new URL(out, 'https://notify.example').origin, 'https://notify.example')
    }),
    { numRuns: 2000 },
  )
})

test('desktop codes: generated codes normalise to 8 letters of the alphabet; normalising is idempotent', () => {
  for (let i = 0; i < 200; i++) assert.match(normalizeUserCode(newUserCode()), /^[BCDFGHJKMNPQRSTVWXZ]{8}$/)
  fc.assert(
    fc.property(anyText, (text) => {
      const once = normalizeUserCode(text)
      assert.equal(normalizeUserCode(once), once)
    }),
  )
})

test('key material is 32 bytes or nothing', () => {
  fc.assert(
    fc.property(anyText, (text) => {
      const key = parseKeyMaterial(text)
      assert.ok(key === undefined || key.length === 32)
    }),
  )
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
      const b = Buffer.from(bytes)
      for (const text of [b.toString('base64'), b.toString('base64url'), b.toString('hex')]) {
        assert.deepEqual(parseKeyMaterial(text), b)
      }
    }),
  )
  assert.equal(parseKeyMaterial(Buffer.alloc(31).toString('base64')), undefined)
})
