/** The per-source-IP token bucket with a fake clock: burst, sustained rate, log throttling, sweeping. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConnectionCap, SourceRateLimiter } from '../src/gate/limits.ts'

test('burst of 120, then about one connection per second, per IP', () => {
  let now = 0
  const limiter = new SourceRateLimiter(1, 120, () => now)
  for (let i = 0; i < 120; i++) assert.equal(limiter.take('192.0.2.1').ok, true)
  const dropped = limiter.take('192.0.2.1')
  assert.deepEqual(dropped, { ok: false, log: true, dropped: 1 })
  assert.equal(limiter.take('192.0.2.2').ok, true, 'other addresses have their own budget')
  now += 999
  assert.deepEqual(limiter.take('192.0.2.1'), { ok: false, log: false, dropped: 0 })
  now += 1
  assert.equal(limiter.take('192.0.2.1').ok, true)
  assert.equal(limiter.take('192.0.2.1').ok, false)
  // One RATELIMIT line per 10 s per IP, carrying the drops it stands for (two silent ones + this one).
  now += 10_000
  for (let i = 0; i < 10; i++) assert.equal(limiter.take('192.0.2.1').ok, true)
  assert.deepEqual(limiter.take('192.0.2.1'), { ok: false, log: true, dropped: 3 })
})

test('a refilled bucket is forgotten by sweep; the cap counts open connections', () => {
  let now = 0
  const limiter = new SourceRateLimiter(1, 2, () => now)
  limiter.take('192.0.2.1')
  assert.equal(limiter.size, 1)
  now += 5_000
  limiter.sweep()
  assert.equal(limiter.size, 0)

  const cap = new ConnectionCap(2)
  assert.equal(cap.tryAcquire().ok, true)
  assert.equal(cap.tryAcquire().ok, true)
  const over = cap.tryAcquire()
  assert.equal(over.ok, false)
  cap.release()
  assert.equal(cap.tryAcquire().ok, true)
  assert.throws(() => new SourceRateLimiter(0, 1), TypeError)
})
