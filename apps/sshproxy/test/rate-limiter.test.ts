/**
 * The per-source-IP token bucket with a fake clock: burst, sustained rate, log throttling, sweeping;
 * the client address it is keyed by; the connection cap fitted to the open-file limit.
 */
import assert from 'node:assert/strict'
import { connect, createServer } from 'node:net'
import { test } from 'node:test'
import { clientIp, connectionCapWithinLimit, describeConnectionCap } from '@gatehouse/kit/gate-limits.ts'
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

test('clientIp: the canonical address of real peers (plain IPv4 as is, IPv4-mapped as IPv4, IPv6 compressed)', async () => {
  const peerOf = (listenHost: string, host: string, localAddress?: string) =>
    new Promise<string>((resolve, reject) => {
      const server = createServer((s) => {
        resolve(clientIp(s))
        s.destroy()
        server.close()
      })
      server.listen(0, listenHost, () => {
        const c = connect({
          port: (server.address() as { port: number }).port,
          host,
          ...(localAddress ? { localAddress } : {}),
        })
        c.on('error', reject)
        c.on('close', () => c.destroy())
      })
    })
  assert.equal(await peerOf('127.0.0.1', '127.0.0.1', '127.0.0.9'), '127.0.0.9')
  // A dual-stack listener sees an IPv4 client as ::ffff:127.0.0.10.
  assert.equal(await peerOf('::', '127.0.0.1', '127.0.0.10'), '127.0.0.10')
  assert.equal(await peerOf('::1', '::1'), '::1')
})

test('the connection cap fits the open-file limit: two descriptors a connection, two more per splice helper', () => {
  const warnings: string[] = []
  const warn = (_fields: object, msg: string) => warnings.push(msg)
  // A generous limit keeps the configured cap, silently.
  assert.equal(connectionCapWithinLimit(1024, { limit: 1_048_576, spliceHelpers: 256, warn }), 1024)
  assert.equal(connectionCapWithinLimit(1024, { limit: undefined, warn }), 1024, 'an unknown limit changes nothing')
  assert.deepEqual(warnings, [])
  // 1,024 files: 64 kept for the gate's own, the rest at two per connection.
  assert.equal(connectionCapWithinLimit(4096, { limit: 1024, warn }), 480)
  // 256 splice helpers cannot all run in 1,024 files: every connection may be spliced (four each).
  assert.equal(connectionCapWithinLimit(4096, { limit: 1024, spliceHelpers: 256, warn }), 240)
  assert.equal(connectionCapWithinLimit(4096, { limit: 4096, spliceHelpers: 256, warn }), 1760)
  assert.equal(connectionCapWithinLimit(10, { limit: 20, warn }), 1, 'never below one')
  assert.equal(warnings.length, 4)
  assert.match(
    warnings[0]!,
    /^max_connections lowered to 480: the open file limit \(1024\) leaves room for no more, at two per connection; raise it \(LimitNOFILE= in a systemd unit, ulimit -n in a shell\) to allow 4096$/,
  )
  assert.equal(describeConnectionCap(1024, 0, 1_048_576), '1024 concurrent connections')
  assert.equal(
    describeConnectionCap(4096, 0, 1024),
    '480 concurrent connections (max_connections 4096, lowered: the open file limit is 1024)',
  )
})
