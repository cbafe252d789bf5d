import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Signal } from '@gatehouse/kit'
import { startRedis, type Redis as TestRedis } from '@gatehouse/testkit'
import { Redis } from 'ioredis'
import { eventId } from '../src/detect/detect.ts'
import { Store } from '../src/store/store.ts'
import { line, testAgent } from './helpers.ts'

let redis: TestRedis
before(async () => {
  redis = await startRedis()
})
after(() => redis?.stop())

const T0 = Date.UTC(2026, 10, 25, 8, 0, 0)
const SECRET_UA = 'SecretAgent/1.0 token=ua-9f8e7d'
const SECRET_PATH = '/reset?token=tgt-1a2b3c'

describe('detection in the shared store', () => {
  test('suspicious hits: signal at the threshold, once per window, deterministic id', async () => {
    const a = await testAgent(redis.url)
    after(() => a.close())
    a.append(line('203.0.113.9', '/.env', 404, T0) + line('203.0.113.9', '/.git/config', 404, T0 + 1000))
    await a.tick()
    const outbox = a.store.outbox('signals')
    assert.equal(await outbox.depth(), 0, 'two hits are below the default threshold of 3')
    a.append(line('203.0.113.9', '/wp-login.php', 404, T0 + 2000))
    await a.tick()
    const queued = await outbox.peek<Signal>(10)
    assert.equal(queued.length, 1)
    const s = queued[0]!.payload
    assert.deepEqual(s, {
      event_id: eventId('www.example.org', 'main', '203.0.113.9', T0 - (T0 % 3600_000), 'suspicious_uri'),
      observed_at: new Date(T0 + 2000).toISOString(),
      host: 'www.example.org',
      site: 'main',
      ip: '203.0.113.9',
      trigger: 'suspicious_uri',
      connections: 3,
      errors: 3,
      successes: 0,
      window_seconds: 3600,
    })
    a.append(line('203.0.113.9', '/.env.bak', 404, T0 + 3000))
    await a.tick()
    assert.equal(await outbox.depth(), 1, 'one signal per host, site, IP and window')
    assert.equal((await a.metrics.storeFailures.get()).values[0]?.value ?? 0, 0, 'no store call failed')
  })

  test('error ratio over distinct paths; static assets stay out of the ratio', async () => {
    const a = await testAgent(redis.url)
    after(() => a.close())
    let text = ''
    // A visitor with a broken page: 30 missing images and fonts, a few pages found.
    for (let i = 0; i < 30; i++) text += line('198.51.100.1', `/img/${i}.png`, 404, T0 + i)
    for (let i = 0; i < 5; i++) text += line('198.51.100.1', `/page${i}`, 200, T0 + i)
    // A prober: 12 distinct missing pages, 2 found.
    for (let i = 0; i < 12; i++) text += line('198.51.100.2', `/probe${i}`, 404, T0 + i)
    for (let i = 0; i < 2; i++) text += line('198.51.100.2', `/`, 200, T0 + i)
    // Below the distinct-path threshold: the same missing page 20 times.
    for (let i = 0; i < 20; i++) text += line('198.51.100.3', '/missing', 404, T0 + i)
    a.append(text)
    await a.tick()
    const ips = (await a.store.outbox('signals').peek<Signal>(10)).map((x) => x.payload.ip)
    assert.deepEqual(ips, ['198.51.100.2'])
  })

  test('instances aggregate into one window: thresholds cross across instances', async () => {
    const a = await testAgent(redis.url)
    after(() => a.close())
    const b = await testAgent(redis.url, { store: { url: redis.url, namespace: a.config.store.namespace } })
    after(() => b.close())
    a.append(line('203.0.113.50', '/.env', 404, T0) + line('203.0.113.50', '/.git/HEAD', 404, T0))
    b.append(line('203.0.113.50', '/phpmyadmin/', 404, T0))
    await a.tick()
    await b.tick()
    const q = await a.store.outbox('signals').peek<Signal>(10)
    assert.equal(q.length, 1)
    assert.equal(q[0]!.payload.connections, 3)
  })

  test('shadow mode detects and counts but queues nothing', async () => {
    const a = await testAgent(redis.url, { shadow: true })
    after(() => a.close())
    for (let i = 0; i < 5; i++) a.append(line('203.0.113.77', `/.env.${i}`, 404, T0))
    await a.tick()
    assert.equal(await a.store.outbox('signals').depth(), 0)
    const metrics = await a.metrics.registry.registry.metrics()
    assert.match(metrics, /websignal_signals_detected_total\{mode="shadow"\} 1/)
    const r = new Redis(redis.url)
    after(() => r.disconnect())
    assert.deepEqual(await r.keys(`ws:{${a.config.store.namespace}}:outbox*`), [])
  })

  test('raw targets and user agents never reach the store or the metrics', async () => {
    const a = await testAgent(redis.url)
    after(() => a.close())
    for (let i = 0; i < 5; i++) {
      a.append(line('203.0.113.99', `${SECRET_PATH}${i}/.env`, 404, T0, SECRET_UA))
      a.append(line('203.0.113.99', `/..%2f..%2fetc/passwd?${SECRET_PATH}`, 400, T0, SECRET_UA))
    }
    await a.tick()
    assert.equal(await a.store.outbox('signals').depth(), 1)
    const r = new Redis(redis.url)
    after(() => r.disconnect())
    let dump = ''
    for (const key of await r.keys('*')) {
      dump += key
      const type = await r.type(key)
      if (type === 'string') dump += await r.get(key)
      else if (type === 'hash') dump += JSON.stringify(await r.hgetall(key))
      else if (type === 'zset') dump += JSON.stringify(await r.zrange(key, 0, -1))
      else dump += ((await r.dumpBuffer(key)) ?? Buffer.alloc(0)).toString('latin1')
    }
    dump += await a.metrics.registry.registry.metrics()
    for (const secret of ['token=', 'tgt-1a2b3c', 'ua-9f8e7d', 'SecretAgent', '/reset', 'passwd', '.env']) {
      assert.ok(!dump.includes(secret), `${secret} leaked`)
    }
  })
})

describe('store', () => {
  test('an incompatible schema version in the namespace is refused', async () => {
    const r = new Redis(redis.url)
    after(() => r.disconnect())
    await r.set('ws:{old}:schema', '99')
    const s = new Store({ url: redis.url, namespace: 'old', commandTimeoutMs: 1000 })
    after(() => s.close())
    await assert.rejects(s.open(), { name: 'SchemaMismatchError', message: /schema version 99/ })
  })

  test('lease: one owner, owner-checked renew and release, epoch always rises', async () => {
    const s = new Store({ url: redis.url, namespace: 'lease', commandTimeoutMs: 1000 })
    after(() => s.close())
    await s.open()
    const e1 = await s.acquire('a', 60_000)
    assert.ok(e1 > 1_700_000_000_000, 'the first epoch is Redis TIME in ms')
    assert.equal(await s.acquire('b', 60_000), 0)
    assert.equal(await s.acquire('a', 60_000), e1, 'the holder keeps its epoch')
    assert.equal(await s.renew('b', e1, 60_000), false)
    assert.equal(await s.release('b', e1), false)
    assert.equal(await s.renew('a', e1, 60_000), true)
    assert.equal(await s.release('a', e1), true)
    const e2 = await s.acquire('b', 60_000)
    assert.ok(e2 > e1)
    // A stored epoch ahead of the clock (a failover to a replica whose clock is behind) still rises.
    await s.release('b', e2)
    await s.redis.set(s.keys.epoch, String(Date.now() + 3600_000))
    const e3 = await s.acquire('c', 60_000)
    assert.equal(e3, Number(await s.redis.get(s.keys.epoch)))
    assert.ok(e3 > Date.now() + 3000_000)
  })

  test('outbox: bounded (oldest dropped), idempotent by id, acknowledged ids not queued again', async () => {
    const s = new Store({ url: redis.url, namespace: 'outbox', commandTimeoutMs: 1000 })
    after(() => s.close())
    await s.open()
    const o = s.outbox('signals')
    for (let i = 0; i < 5; i++) await o.add(`id${i}`, { i }, 3, 1000 + i)
    assert.deepEqual(
      (await o.peek<{ i: number }>(10)).map((x) => x.id),
      ['id2', 'id3', 'id4'],
    )
    assert.deepEqual(await o.add('id3', { i: 3 }, 3, 2000), { added: false, dropped: 0 })
    await o.ack(['id2'], 3000, 60_000)
    assert.deepEqual(await o.add('id2', { i: 2 }, 3, 4000), { added: false, dropped: 0 })
    assert.equal(await o.depth(), 2)
  })
})
