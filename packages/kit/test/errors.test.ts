import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { AppError, defineErrors, kitErrors, StartupError } from '../src/index.ts'

describe('defineErrors', () => {
  const errors = defineErrors({
    zone_not_found: { status: 404, message: (zone: string) => `zone ${zone} does not exist` },
    stale: { status: 412, message: () => 'the resource changed' },
    backend_down: { status: 503, message: () => 'the backend is down', headers: { 'retry-after': '5' } },
  })

  test('each key is the code and carries its status', () => {
    for (const [key, factory] of Object.entries(errors)) {
      assert.equal(factory.code, key)
      const err = (factory as (...a: unknown[]) => AppError)('x')
      assert.ok(err instanceof AppError)
      assert.equal(err.code, key)
      assert.equal(err.statusCode, factory.status)
    }
    assert.equal(errors.zone_not_found.status, 404)
    assert.equal(errors.zone_not_found('example.test').message, 'zone example.test does not exist')
  })

  test('kit error keys equal their codes', () => {
    for (const [key, factory] of Object.entries(kitErrors)) assert.equal(factory.code, key)
  })

  test('with() sets cause, details and headers', () => {
    const cause = new Error('disk on fire')
    const err = errors.stale.with({ cause, details: { etag: '"abc"' }, headers: { etag: '"abc"' } })
    assert.equal(err.cause, cause)
    assert.deepEqual(err.details, { etag: '"abc"' })
    assert.deepEqual(err.headers, { etag: '"abc"' })
    assert.equal(err.statusCode, 412)
  })

  test("a definition's headers come with every error of its code; with() adds to them or overrides them", () => {
    assert.deepEqual(errors.backend_down().headers, { 'retry-after': '5' })
    assert.deepEqual(errors.backend_down.with({ cause: new Error('refused') }).headers, { 'retry-after': '5' })
    assert.deepEqual(errors.backend_down.with({ headers: { 'retry-after': '30', 'x-why': 'maintenance' } }).headers, {
      'retry-after': '30',
      'x-why': 'maintenance',
    })
    assert.equal(errors.stale().headers, undefined)
  })

  test('toJSON has the shared shape and never the cause', () => {
    const err = errors.zone_not_found.with({ cause: new Error('secret detail') }, 'a.test')
    assert.deepEqual(err.toJSON(), { error: { code: 'zone_not_found', message: 'zone a.test does not exist' } })
    assert.doesNotMatch(JSON.stringify(err), /secret detail/)
    const withDetails = errors.stale.with({ details: { current: 3 } })
    assert.deepEqual(JSON.parse(JSON.stringify(withDetails)), {
      error: { code: 'stale', message: 'the resource changed', current: 3 },
    })
  })

  for (const bad of ['NotFound', 'not-found', '1bad', '_x', '']) {
    test(`code ${JSON.stringify(bad)} is a TypeError`, () => {
      assert.throws(() => defineErrors({ [bad]: { status: 400, message: () => 'x' } }), TypeError)
    })
  }
})

describe('StartupError', () => {
  test('keeps one line per problem', () => {
    const err = new StartupError(['a: bad', 'b: worse'])
    assert.deepEqual(err.lines, ['a: bad', 'b: worse'])
    assert.equal(err.message, 'a: bad; b: worse')
    assert.deepEqual(new StartupError('one').lines, ['one'])
  })
})
