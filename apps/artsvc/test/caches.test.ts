/**
 * The content origin's bounded cache (src/content/caches.ts, "second chance" eviction): bounds
 * by count and weight, a used entry outlives unused ones, and a property test of its invariants.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { LruCache } from '../src/content/caches.ts'

/** The keys the cache holds (reading marks them used). */
const present = <V>(cache: LruCache<V>, keys: string[]) => keys.filter((k) => cache.get(k) !== undefined)

test('the oldest unused entry goes first; a used one gets a second chance', () => {
  const cache = new LruCache<number>(3)
  cache.set('a', 1)
  cache.set('b', 2)
  cache.set('c', 3)
  assert.equal(cache.get('a'), 1) // marks 'a'
  cache.set('d', 4) // 'a' loses its mark and moves behind 'c'; 'b' goes
  cache.set('e', 5) // 'c' goes (unused), then 'a' would be next
  const kept = ['a', 'b', 'c', 'd', 'e'].filter((k) => cache.get(k) !== undefined)
  assert.deepEqual(kept, ['a', 'd', 'e'])
})

test('weight bounds the cache; replacing a value replaces its weight', () => {
  const cache = new LruCache<string>(100, 10, (v) => v.length)
  cache.set('a', 'w'.repeat(4))
  cache.set('b', 'w'.repeat(4))
  cache.set('a', 'x') // 1 + 4
  cache.set('c', 'w'.repeat(5)) // 10: all fit
  assert.deepEqual(present(cache, ['a', 'b', 'c']), ['a', 'b', 'c'])
  cache.set('d', 'w'.repeat(2)) // all were just read (marked): after one pass of second chances, the oldest go until it fits
  assert.ok(present(cache, ['a', 'b', 'c', 'd']).includes('d'))
  // A value heavier than the bound is not kept, and nothing else is lost for nothing but it.
  const small = new LruCache<string>(100, 3, (v) => v.length)
  small.set('x', 'w'.repeat(2))
  small.set('big', 'w'.repeat(4))
  assert.deepEqual([small.get('big'), small.get('x')], [undefined, 'w'.repeat(2)])
  small.clear()
  assert.equal(small.get('x'), undefined)
})

test('property: bounds hold, values are the last set, and the newest entry stays when it fits', () => {
  const op = fc.oneof(
    fc.record({
      kind: fc.constant('set' as const),
      key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
      weight: fc.integer({ min: 1, max: 6 }),
    }),
    fc.record({ kind: fc.constant('get' as const), key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f') }),
  )
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 12 }),
      fc.array(op, { maxLength: 60 }),
      (maxEntries, maxWeight, ops) => {
        const cache = new LruCache<{ key: string; weight: number; n: number }>(maxEntries, maxWeight, (v) => v.weight)
        const last = new Map<string, number>()
        ops.forEach((o, n) => {
          if (o.kind === 'set') {
            cache.set(o.key, { key: o.key, weight: o.weight, n })
            last.set(o.key, n)
            if (o.weight <= maxWeight) assert.equal(cache.get(o.key)?.n, n, 'the newest entry stays when it fits')
          } else {
            const v = cache.get(o.key)
            if (v !== undefined) assert.equal(v.n, last.get(o.key), 'a value is the last one set')
          }
          const kept = ['a', 'b', 'c', 'd', 'e', 'f'].map((k) => cache.get(k)).filter((v) => v !== undefined)
          assert.ok(kept.length <= maxEntries, 'count bound')
          assert.ok(kept.reduce((w, v) => w + v.weight, 0) <= maxWeight, 'weight bound')
        })
      },
    ),
    { numRuns: 300 },
  )
})
