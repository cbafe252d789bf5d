import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { createTestCa, startRedis, type Redis as TestRedis, tempDir } from '@gatehouse/testkit'
import { AnalyticsCollector, normalizePath, VisitorKeys } from '../src/analytics/collector.ts'
import { line, testAgent } from './helpers.ts'

let redis: TestRedis
before(async () => {
  redis = await startRedis()
})
after(() => redis?.stop())

const H = Date.UTC(2026, 10, 25, 8, 0, 0)
const MIN = 60_000

test('paths lose their query and ids; visitor ids depend on secret, pipeline and day', () => {
  assert.equal(normalizePath('/users/123/orders/9f86d081884c7d65?x=1'), '/users/:id/orders/:id')
  assert.equal(normalizePath('/a/3fa85f64-5717-4562-b3fc-2c963f66afa6'), '/a/:id')
  assert.equal(normalizePath('/blog/hello-world'), '/blog/hello-world')
  const k = new VisitorKeys('s'.repeat(20), 'p1')
  const v = k.visitor('203.0.113.1', 'UA', 'h', H)
  assert.equal(k.visitor('203.0.113.1', 'UA', 'h', H + 3600_000), v, 'same day, same visitor')
  assert.notEqual(k.visitor('203.0.113.1', 'UA', 'h', H + 86_400_000), v, 'another day')
  assert.notEqual(new VisitorKeys('t'.repeat(20), 'p1').visitor('203.0.113.1', 'UA', 'h', H), v, 'rotated secret')
  assert.notEqual(new VisitorKeys('s'.repeat(20), 'p2').visitor('203.0.113.1', 'UA', 'h', H), v, 'another pipeline')
})

test("collector: a client's later lines in a tick count requests and bots, one visitor; hours and hosts apart", () => {
  const keys = new VisitorKeys('s'.repeat(20), 'p1')
  const c = new AnalyticsCollector(keys)
  for (let i = 0; i < 3; i++) c.add('203.0.113.1', 'h', 'main', `/a?i=${i}`, 200, 'Googlebot/2.1', H + i)
  c.add('203.0.113.1', 'h', 'main', '/users/7', 404, 'Mozilla/5.0', H + 10)
  c.add('203.0.113.1', 'h2', 'main', '/a', 200, 'Mozilla/5.0', H + 20)
  c.add('203.0.113.1', 'h', 'main', '/a', 200, 'Mozilla/5.0', H + 3600_000)
  const [first, ...rest] = c.drain()
  assert.deepEqual(
    { ...first, visitors: [...first!.visitors].sort(), paths: [...first!.paths] },
    {
      host: 'h',
      site: 'main',
      hour: H,
      requests: 4,
      status: [0, 3, 0, 1, 0],
      bots: 3,
      visitors: [
        keys.visitor('203.0.113.1', 'Googlebot/2.1', 'h', H),
        keys.visitor('203.0.113.1', 'Mozilla/5.0', 'h', H),
      ].sort(),
      paths: [
        ['/a', 3],
        ['/users/:id', 1],
      ],
    },
  )
  assert.deepEqual(
    rest.map((r) => [r.host, r.hour, r.requests, r.visitors.size]),
    [
      ['h2', H, 1, 1],
      ['h', H + 3600_000, 1, 1],
    ],
  )
  // The next tick starts empty and hashes the same client to the same visitor.
  c.add('203.0.113.1', 'h', 'main', '/a', 200, 'Mozilla/5.0', H + 30)
  const [again] = c.drain()
  assert.deepEqual([...again!.visitors], [keys.visitor('203.0.113.1', 'Mozilla/5.0', 'h', H)])
  assert.equal(again!.bots, 0)
})

test('hourly roll with a fake clock: one record per host, site and hour, written once, no IP or UA', async () => {
  const out = tempDir('websignal-analytics-')
  after(() => out.remove())
  const file = join(out.path, 'analytics.jsonl')
  let now = H + 30 * MIN
  const a = await testAgent(
    redis.url,
    { analytics: { output: 'file', file, secret: 'analytics-secret-0123456789', grace: '2m' } },
    undefined,
    () => now,
  )
  after(() => a.close())
  const BOT_UA = 'Googlebot/2.1 (+http://www.google.com/bot.html)'
  a.append(
    line('203.0.113.1', '/users/1', 200, H + MIN) +
      line('203.0.113.1', '/users/2?page=3', 200, H + 2 * MIN) +
      line('203.0.113.2', '/', 301, H + 3 * MIN) +
      line('203.0.113.3', '/missing', 404, H + 4 * MIN, BOT_UA) +
      line('203.0.113.3', '/boom', 500, H + 5 * MIN, BOT_UA) +
      // The next hour: not closed in this test.
      line('203.0.113.4', '/', 200, H + 61 * MIN),
  )
  await a.tick()
  await a.agent.analyticsRound()
  assert.equal(existsSync(file), false, 'the hour is not over')
  now = H + 60 * MIN + MIN
  await a.agent.analyticsRound()
  assert.equal(existsSync(file), false, 'within the grace period')
  now = H + 60 * MIN + 3 * MIN
  await a.agent.analyticsRound()
  const records = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  assert.equal(records.length, 1)
  const r = records[0]
  assert.match(r.id, /^wa-[0-9a-f]{40}$/)
  assert.deepEqual(
    { ...r, id: undefined },
    {
      id: undefined,
      host: 'www.example.org',
      site: 'main',
      hour: '2026-11-25T08:00:00.000Z',
      requests: 5,
      status: { '1xx': 0, '2xx': 2, '3xx': 1, '4xx': 1, '5xx': 1 },
      unique_visitors: 3,
      top_paths: [
        { path: '/users/:id', count: 2 },
        { path: '/missing', count: 1 },
        { path: '/boom', count: 1 },
        { path: '/', count: 1 },
      ].sort((x, y) => y.count - x.count || (x.path < y.path ? 1 : -1)),
      bot_share: 0.4,
    },
  )
  const text = readFileSync(file, 'utf8')
  for (const secret of ['203.0.113', 'Googlebot', 'Mozilla', 'page=3'])
    assert.ok(!text.includes(secret), `${secret} leaked`)
  await a.agent.analyticsRound()
  assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 1, 'written once')
  assert.equal(await a.store.outbox('analytics').depth(), 0)
})

test('analytics config: a missing secret file stops startup', async () => {
  const { writeConfig } = await import('./helpers.ts')
  const c = writeConfig({
    inputs: [{ path: '/var/log/x.log', format: 'combined', site: 'main' }],
    analytics: { output: 'file', file: '/tmp/x.jsonl' },
  })
  after(() => c.dir.remove())
  assert.throws(() => c.load(), /analytics\.secret: required/)
  const { loadWebsignalConfig } = await import('../src/config.ts')
  assert.throws(
    () => loadWebsignalConfig(c.path, { WEBSIGNAL_ANALYTICS_SECRET_FILE: '/nonexistent/secret' }),
    /WEBSIGNAL_ANALYTICS_SECRET_FILE: secret file \/nonexistent\/secret cannot be read/,
  )
})

/** An agent whose analytics go to an HTTPS endpoint trusted through `caPath`; closed after the test. */
async function httpsAgent(url: string, caPath: string, now: () => number) {
  const a = await testAgent(
    redis.url,
    {
      analytics: {
        output: 'https',
        url,
        token: 'analytics-token-abc',
        ca: caPath,
        secret: 'analytics-secret-0123456789',
        grace: '2m',
      },
    },
    undefined,
    now,
  )
  after(() => a.close())
  return a
}

test('https output: bearer token, the test CA, retried after a refusal and a redirect, delivered once', async () => {
  const ca = createTestCa()
  after(() => ca.remove())
  const cert = ca.issueServer()
  const received: { auth: string | undefined; body: { records: { id: string; requests: number }[] } }[] = []
  // The first answer refuses (503), the second redirects (never followed), then it takes records.
  const answers = [503, 302]
  const server = createHttpsServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    let text = ''
    req.on('data', (c) => {
      text += c
    })
    req.on('end', () => {
      const status = answers.shift() ?? 200
      if (status === 200) received.push({ auth: req.headers.authorization, body: JSON.parse(text) })
      if (status === 302) res.setHeader('location', 'https://127.0.0.1:9/elsewhere')
      res.writeHead(status).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  after(() => server.close())
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/ingest`

  let now = H + 30 * MIN
  const a = await httpsAgent(url, ca.caPath, () => now)
  a.append(line('203.0.113.1', '/a', 200, H + MIN) + line('203.0.113.2', '/b', 404, H + 2 * MIN))
  await a.tick()
  now = H + 60 * MIN + 3 * MIN
  await a.agent.analyticsRound()
  assert.equal(received.length, 0, 'refused with 503')
  assert.equal(await a.store.outbox('analytics').depth(), 1, 'kept for the next round')
  await a.agent.analyticsRound()
  assert.equal(received.length, 0, 'a redirect is a refusal, not followed')
  assert.equal(await a.store.outbox('analytics').depth(), 1)
  assert.equal((await a.metrics.analyticsPublishFailures.get()).values[0]?.value, 2)
  await a.agent.analyticsRound()
  assert.equal(received.length, 1)
  assert.equal(received[0]!.auth, 'Bearer analytics-token-abc')
  assert.equal(received[0]!.body.records.length, 1)
  assert.equal(received[0]!.body.records[0]!.requests, 2)
  assert.equal(await a.store.outbox('analytics').depth(), 0)
  await a.agent.analyticsRound()
  assert.equal(received.length, 1, 'delivered once')
})

test('https output: a server certificate the configured CA did not sign is refused, the record kept', async () => {
  const ca = createTestCa()
  const other = createTestCa('Another CA')
  after(() => {
    ca.remove()
    other.remove()
  })
  const cert = other.issueServer()
  let hits = 0
  const server = createHttpsServer({ cert: cert.cert, key: cert.key }, (_req, res) => {
    hits++
    res.writeHead(200).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  after(() => server.close())
  let now = H + 30 * MIN
  const a = await httpsAgent(`https://127.0.0.1:${(server.address() as AddressInfo).port}/ingest`, ca.caPath, () => now)
  a.append(line('203.0.113.1', '/a', 200, H + MIN))
  await a.tick()
  now = H + 60 * MIN + 3 * MIN
  await a.agent.analyticsRound()
  assert.equal(hits, 0)
  assert.equal(await a.store.outbox('analytics').depth(), 1)
})
