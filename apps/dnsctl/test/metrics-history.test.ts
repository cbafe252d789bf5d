/**
 * Metrics history: sampling a real kresd's counters, downsampling with a fake clock on SQLite
 * and PostgreSQL, and the endpoint's range parameter.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { openDatabase } from '@gatehouse/kit'
import { dnsQuery, type Postgres, startKresd, startPostgres, tempDir } from '@gatehouse/testkit'
import { metricPoints } from '../src/db/migrations/0003_metric_points.ts'
import { migrations } from '../src/db/migrations/index.ts'
import type { DB } from '../src/db/schema.ts'
import { HistoryService } from '../src/history/service.ts'
import { countPoints, RESOLUTIONS } from '../src/history/store.ts'
import { readKresdStats } from '../src/resolver/stats.ts'
import { type Harness, json, startHarness } from './helpers.ts'

const T0 = Date.parse('2026-11-01T00:00:00Z')

let pg: Postgres | undefined
after(() => pg?.stop())

const dialects: [string, () => Promise<{ url: string; migrations: typeof migrations }>][] = [
  ['sqlite', async () => ({ url: `sqlite:${join(tempDir('dnsctl-history-').path, 'h.db')}`, migrations })],
  [
    'postgres',
    async () => {
      pg ??= await startPostgres()
      // dnsctl itself runs on SQLite (its earlier migrations use SQLite types); the history
      // store is plain Kysely and is checked on PostgreSQL with its own migration.
      return { url: await pg.createDatabase(), migrations: { '0003_metric_points': metricPoints } }
    },
  ],
]

for (const [dialect, open] of dialects) {
  describe(`metrics history downsampling (${dialect})`, () => {
    test('8 days of 5-minute samples: bounded rows, every range sums to the truth', async () => {
      const target = await open()
      const database = await openDatabase<DB>(target)
      try {
        let clock = T0
        const history = new HistoryService(database.db, [], () => new Date(clock))
        const socket = '/run/kresd/control/1'
        let queries = 0
        let cached = 0
        let nxdomain = 0
        const step = 300_000
        for (let t = 0; t <= 8 * 86400_000; t += step) {
          clock = T0 + t
          // 600 answers per 5 minutes: 2 per second, a quarter cached, a tenth NXDOMAIN.
          await history.sample([{ socket, queries, cached, nxdomain, cacheEntries: 1000 + t / step }])
          queries += 600
          cached += 150
          nxdomain += 60
        }
        // Old fine points are pruned: at most 25 h of 1-minute buckets and 8 days of hourly ones.
        assert.ok((await countPoints(database.db, 60)) <= RESOLUTIONS[0].keepSeconds / 300 + 1)
        assert.ok((await countPoints(database.db, 3600)) <= 8 * 24 + 1)
        for (const range of ['1h', '6h', '24h', '7d'] as const) {
          const body = await history.history(range)
          assert.equal(body.range, range)
          assert.deepEqual(body.series, ['query_rate', 'cache_hit_ratio', 'nxdomain_rate', 'cache_entries'])
          assert.ok(body.points.length > 0)
          for (const p of body.points) {
            assert.ok(Math.abs(p.query_rate - 2) < 1e-9, `${range} ${p.time} ${p.query_rate}`)
            assert.ok(Math.abs(p.cache_hit_ratio! - 0.25) < 1e-9)
            assert.ok(Math.abs(p.nxdomain_rate! - 0.2) < 1e-9)
            assert.ok(Date.parse(p.time) >= Date.parse(body.from) - body.step_seconds * 1000)
          }
          const expected = { '1h': 12, '6h': 72, '24h': 96, '7d': 168 }[range]
          assert.ok(Math.abs(body.points.length - expected) <= 1, `${range}: ${body.points.length} points`)
        }
        // The latest cache entry count is kept.
        const last = (await history.history('1h')).points.at(-1)!
        assert.equal(last.cache_entries, 1000 + (8 * 86400_000) / step)
      } finally {
        await database.close()
      }
    })

    test('a first sample only sets the baseline; a restarted process counts from zero', async () => {
      const database = await openDatabase<DB>(await open())
      try {
        let clock = T0
        const history = new HistoryService(database.db, [], () => new Date(clock))
        const s = (queries: number) => [{ socket: 'a', queries, cached: 0, nxdomain: 0, cacheEntries: 1 }]
        await history.sample(s(5000))
        assert.equal((await history.history('1h')).points.length, 0)
        clock += 60_000
        await history.sample(s(5060))
        clock += 60_000
        await history.sample(s(30)) // restarted: 30 new answers
        const points = (await history.history('1h')).points
        assert.deepEqual(
          points.map((p) => p.query_rate),
          [1, 0.5],
        )
      } finally {
        await database.close()
      }
    })
  })
}

describe('metrics history from a real kresd and over HTTP', () => {
  let h: Harness
  let clock = T0
  before(async () => {
    h = await startHarness({ now: () => new Date(clock) })
  })
  after(() => h.close())

  test('samples the counters of every kresd process through its control socket', async () => {
    const kresd = await startKresd({ instances: 2 })
    try {
      const dirs = kresd.instances.map((_, i) => join(kresd.dir, `instance-${i}`, 'control'))
      const history = new HistoryService(h.db, dirs, () => new Date(clock))
      const stats = await readKresdStats(dirs)
      assert.equal(stats.length, 2)
      assert.ok(stats.every((s) => s.queries >= 0 && s.cacheEntries >= 0))
      await history.sample()
      for (let i = 0; i < 20; i++) await dnsQuery(kresd.port, `n${i}.example`, 'A')
      clock += 60_000
      await history.sample()
      const points = (await history.history('1h')).points
      assert.equal(points.length, 1)
      // 20 answers (kresd also counts its own internal requests) in 60 s.
      assert.ok(points[0]!.query_rate >= 20 / 60, JSON.stringify(points))
    } finally {
      await kresd.stop()
    }
  })

  test('GET /v1/metrics/history takes exactly one known range', async () => {
    for (const range of ['1h', '6h', '24h', '7d']) {
      const res = await h.call('GET', `/v1/metrics/history?range=${range}`)
      assert.equal(res.status, 200)
      assert.equal((await json(res)).range, range)
    }
    for (const bad of [
      '',
      '?range=',
      '?range=2h',
      '?range=1H',
      '?range=query_rate',
      '?range=1h&metric=x',
      '?query=up',
    ]) {
      const res = await h.call('GET', `/v1/metrics/history${bad}`)
      assert.equal(res.status, 400, bad)
      assert.equal((await json(res)).error.code, 'invalid_request', bad)
    }
  })
})
