/**
 * Metrics history from the optional Prometheus upstream: a real Prometheus scraping the
 * `/metrics` of kresd's http module on each of two kresd processes, the fixed queries compared
 * with the counters read from kresd's control sockets, and every way the upstream can fail.
 */
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  dnsQuery,
  EMPTY_RPZ,
  freePort,
  type Knot,
  type Kresd,
  type Prometheus,
  startKnot,
  startKresd,
  startPrometheus,
} from '@gatehouse/testkit'
import { loadDnsctlConfig } from '../src/config.ts'
import { combinedQuery, fixedQueries } from '../src/history/prometheus.ts'
import { kresdEval } from '../src/resolver/stats.ts'
import { type Harness, json, startHarness, zoneText } from './helpers.ts'

const PREFIX = 'kresd_'
const JOB = 'kresd'

interface Counters {
  total: number
  cached: number
  nxdomain: number
  entries: number
}

/** Every kresd process's stats.list() and cache.stats(), by control socket. */
async function kresdStats(kresd: Kresd) {
  const out: { process: string; stats: Record<string, number>; cache: Record<string, number> }[] = []
  for (const [i] of kresd.instances.entries()) {
    const dir = join(kresd.dir, `instance-${i}`, 'control')
    for (const name of readdirSync(dir)) {
      const parsed = JSON.parse(await kresdEval(join(dir, name), '{s = stats.list(), c = cache.stats()}', 2000)) as {
        s: Record<string, number>
        c: Record<string, number>
      }
      out.push({ process: `${i}`, stats: parsed.s, cache: parsed.c })
    }
  }
  return out
}

function sum(stats: Awaited<ReturnType<typeof kresdStats>>): Counters {
  return {
    total: stats.reduce((n, s) => n + (s.stats['answer.total'] ?? 0), 0),
    cached: stats.reduce((n, s) => n + (s.stats['answer.cached'] ?? 0), 0),
    nxdomain: stats.reduce((n, s) => n + (s.stats['answer.nxdomain'] ?? 0), 0),
    entries: Math.max(...stats.map((s) => s.cache.count_entries ?? 0)),
  }
}

function closeServer(server: Server) {
  server.closeAllConnections()
  return new Promise<void>((r) => server.close(() => r()))
}

const RPZ = `${EMPTY_RPZ}blocked.test. CNAME .\n*.blocked.test. CNAME .\n`

describe('metrics history from a Prometheus upstream', () => {
  let knot: Knot
  let kresd: Kresd
  let prom: Prometheus
  let h: Harness
  let before0: Counters
  let after0: Counters

  before(async () => {
    knot = await startKnot({ zones: { 'example.test': zoneText() } })
    // Without the priming module kresd sends no requests of its own (it re-primes the root NS
    // set now and then, counted as answers), so the counters move only with the test's queries.
    kresd = await startKresd({
      // One process: kresd's module renders one process's counters per scrape, and only
      // counters taken in one scrape give the exact ratios asserted below (two targets are
      // scraped at different instants, so their rate() extrapolations differ slightly).
      instances: 1,
      rpz: RPZ,
      stub: `127.0.0.1@${knot.port}`,
      extraConfig: "modules.unload('priming')",
      metrics: { namespace: PREFIX },
    })
    // Warm-up, so every counter is well above zero before Prometheus's first sample: its rate()
    // extrapolation then treats all series alike.
    for (const i of kresd.instances) {
      for (let n = 0; n < 40; n++) {
        await dnsQuery(i.port, 'www.example.test', 'A')
        await dnsQuery(i.port, `w${n}.blocked.test`, 'A')
      }
    }
    before0 = sum(await kresdStats(kresd))
    prom = await startPrometheus({
      targets: kresd.instances.map((i) => `127.0.0.1:${i.metricsPort}`),
      job: JOB,
    })
    await prom.waitForScrape()
    // The measured traffic: cached answers, blocked names (NXDOMAIN from the RPZ) and names
    // knotd answers NXDOMAIN, through the shared address.
    for (let n = 0; n < 12; n++) await dnsQuery(kresd.port, 'www.example.test', 'A')
    for (let n = 0; n < 6; n++) await dnsQuery(kresd.port, `x${n}.blocked.test`, 'A')
    for (let n = 0; n < 4; n++) await dnsQuery(kresd.port, `missing${n}.example.test`, 'A')
    after0 = sum(await kresdStats(kresd))
    await prom.waitForScrape()
    h = await startHarness({
      knot,
      env: {
        DNSCTL_METRICS_PROMETHEUS_URL: `${prom.url}/`,
        DNSCTL_METRICS_PROMETHEUS_SELECTOR: `job="${JOB}"`,
        DNSCTL_METRICS_PROMETHEUS_PREFIX: PREFIX,
        DNSCTL_RESOLVER_CONTROL_DIRS: kresd.instances
          .map((_, i) => join(kresd.dir, `instance-${i}`, 'control'))
          .join(','),
      },
    })
  })
  after(async () => {
    await h?.close()
    await prom?.stop()
    await kresd?.stop()
    await knot?.stop()
  })

  test('every range answers the fixed series from Prometheus, matching kresd’s own counters', async () => {
    const d = {
      total: after0.total - before0.total,
      cached: after0.cached - before0.cached,
      nxdomain: after0.nxdomain - before0.nxdomain,
    }
    assert.ok(d.total >= 22 && d.cached > 0 && d.nxdomain > 0, JSON.stringify(d))
    for (const [range, step] of [
      ['1h', 60],
      ['6h', 300],
      ['24h', 900],
      ['7d', 3600],
    ] as const) {
      const res = await h.call('GET', `/v1/metrics/history?range=${range}`)
      const body = await json(res)
      assert.equal(res.status, 200, JSON.stringify(body))
      assert.equal(body.source, 'prometheus')
      assert.equal(body.range, range)
      assert.equal(body.step_seconds, step)
      assert.equal(body.sample_seconds, step, 'Prometheus answers one point per step')
      assert.deepEqual(body.series, ['query_rate', 'cache_hit_ratio', 'nxdomain_rate', 'cache_entries'])
      assert.ok(body.points.length >= 1, JSON.stringify(body))
      assert.ok(body.points.length <= (range === '1h' ? 60 : range === '6h' ? 72 : range === '24h' ? 96 : 168))
      const last = body.points.at(-1)
      // The last step ends now; its time is the step's start, as in the embedded store.
      assert.ok(Date.parse(last.time) <= Date.now() - (step - 1) * 1000)
      assert.ok(Date.parse(last.time) >= Date.parse(body.from))
      // Ratios of counters scraped together are exact; the rate is extrapolated over the step.
      assert.ok(Math.abs(last.cache_hit_ratio - d.cached / d.total) < 1e-9, `${range}: ${JSON.stringify(last)}`)
      assert.ok(Math.abs(last.nxdomain_rate / last.query_rate - d.nxdomain / d.total) < 1e-9, range)
      assert.ok(last.query_rate * step >= d.total * (1 - 1e-9), `${range}: ${last.query_rate}`)
      assert.ok(last.query_rate * step <= d.total * 3, `${range}: ${last.query_rate}`)
      assert.equal(last.cache_entries, after0.entries, `${range}: ${JSON.stringify(last)}`)
    }
  })

  test('callers still name only a range', async () => {
    for (const bad of [
      '',
      '?range=1h&query=up',
      '?range=1h&metric=answer_total',
      '?range=up',
      '?range=1h&upstream=x',
    ]) {
      const res = await h.call('GET', `/v1/metrics/history${bad}`)
      assert.equal(res.status, 400, bad)
      assert.equal((await json(res)).error.code, 'invalid_request', bad)
    }
  })

  test('the fixed queries: prefix, matchers, one window per step', () => {
    assert.deepEqual(fixedQueries('kresd_', 'job="a", site=~"x.*"', 300), {
      query_rate: 'sum(rate(kresd_answer_total{job="a", site=~"x.*"}[300s]))',
      cache_hit_ratio:
        'sum(rate(kresd_answer_cached{job="a", site=~"x.*"}[300s])) / sum(rate(kresd_answer_total{job="a", site=~"x.*"}[300s]))',
      nxdomain_rate: 'sum(rate(kresd_answer_nxdomain{job="a", site=~"x.*"}[300s]))',
      cache_entries: 'max(last_over_time(kresd_cache_count_entries{job="a", site=~"x.*"}[300s]))',
    })
    // One query, so the four are evaluated on one snapshot (separate queries raced the scrapes).
    assert.equal(
      combinedQuery('p_', 'job="a"', 60),
      [
        'label_replace(sum(rate(p_answer_total{job="a"}[60s])), "series", "query_rate", "", "")',
        'label_replace(sum(rate(p_answer_cached{job="a"}[60s])) / sum(rate(p_answer_total{job="a"}[60s])), "series", "cache_hit_ratio", "", "")',
        'label_replace(sum(rate(p_answer_nxdomain{job="a"}[60s])), "series", "nxdomain_rate", "", "")',
        'label_replace(max(last_over_time(p_cache_count_entries{job="a"}[60s])), "series", "cache_entries", "", "")',
      ].join(' or '),
    )
  })

  test('matchers that select nothing give no points, not invented ones', async () => {
    const other = await startHarness({
      knot,
      env: { DNSCTL_METRICS_PROMETHEUS_URL: prom.url, DNSCTL_METRICS_PROMETHEUS_SELECTOR: 'job="nothing"' },
    })
    try {
      const body = await json(await other.call('GET', '/v1/metrics/history?range=24h'))
      assert.equal(body.source, 'prometheus')
      assert.deepEqual(body.points, [])
    } finally {
      await other.close()
    }
  })

  test('an upstream that is down, slow, not Prometheus or answering too much: 502/504 with the reason', async () => {
    let mode = 'html'
    const fake = createServer((req, res) => {
      if (mode === 'hang') return // never answers
      if (mode === 'html') {
        res.writeHead(200, { 'content-type': 'text/html' })
        return res.end('<html><body>login</body></html>')
      }
      if (mode === 'bad_data') {
        res.writeHead(400, { 'content-type': 'application/json' })
        return res.end(JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error' }))
      }
      if (mode === 'huge') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(`{"status":"success","data":{"resultType":"matrix","result":[${'0,'.repeat(600_000)}0]}}`)
      }
      if (mode === 'two-series') {
        res.writeHead(200, { 'content-type': 'application/json' })
        const series = { metric: {}, values: [[1, '1']] }
        return res.end(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [series, series] } }))
      }
      if (mode === 'redirect') {
        res.writeHead(302, { location: `${prom.url}${req.url}` })
        return res.end()
      }
      res.writeHead(503, { 'content-type': 'text/plain' })
      res.end('unavailable')
    })
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r))
    const fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`
    const down = `http://127.0.0.1:${await freePort()}`
    const viaFake = await startHarness({
      knot,
      env: { DNSCTL_METRICS_PROMETHEUS_URL: fakeUrl, DNSCTL_METRICS_PROMETHEUS_TIMEOUT: '2s' },
    })
    const viaDown = await startHarness({ knot, env: { DNSCTL_METRICS_PROMETHEUS_URL: down } })
    try {
      const expect = async (harness: Harness, status: number, code: string, message: RegExp) => {
        const res = await harness.call('GET', '/v1/metrics/history?range=1h')
        const body = await json(res)
        assert.equal(res.status, status, JSON.stringify(body))
        assert.equal(body.error.code, code)
        assert.match(body.error.message, message)
      }
      await expect(
        viaDown,
        502,
        'metrics_upstream_unavailable',
        /^Prometheus at http:\/\/127\.0\.0\.1:\d+ is unreachable: /,
      )
      const cases: [string, number, string, RegExp][] = [
        ['html', 502, 'metrics_upstream_unavailable', /answered 200 with a body that is not JSON/],
        ['bad_data', 502, 'metrics_upstream_unavailable', /answered 400 to the \w+ query \(bad_data: parse error\)/],
        ['huge', 502, 'metrics_upstream_unavailable', /answered more than 1048576 bytes; refused/],
        ['two-series', 502, 'metrics_upstream_unavailable', /with something other than one range series per name/],
        ['redirect', 502, 'metrics_upstream_unavailable', /redirects are not followed/],
        ['503', 502, 'metrics_upstream_unavailable', /answered 503 with a body that is not JSON/],
        ['hang', 504, 'metrics_upstream_timeout', /did not answer within 2000 ms/],
      ]
      for (const [m, status, code, message] of cases) {
        mode = m
        await expect(viaFake, status, code, message)
      }
    } finally {
      await viaFake.close()
      await viaDown.close()
      await closeServer(fake)
    }
  })

  test('bad configuration values are refused at startup with a clear message', () => {
    const load = (env: Record<string, string>) => () => loadDnsctlConfig([], { DNSCTL_STATE_DIR: '/tmp/x', ...env })
    for (const [env, message] of [
      [{ DNSCTL_METRICS_PROMETHEUS_URL: 'ftp://127.0.0.1:9090' }, /must use http or https/],
      [{ DNSCTL_METRICS_PROMETHEUS_URL: 'prometheus:9090' }, /must use http or https|absolute URL/],
      [{ DNSCTL_METRICS_PROMETHEUS_URL: 'not a url' }, /must be an absolute URL/],
      [{ DNSCTL_METRICS_PROMETHEUS_URL: 'http://u:p@127.0.0.1:9090' }, /credentials in the URL are not supported/],
      [{ DNSCTL_METRICS_PROMETHEUS_URL: 'http://127.0.0.1:9090/?x=1' }, /must not have a query string/],
      [{ DNSCTL_METRICS_PROMETHEUS_SELECTOR: 'job="a"}) or vector(1) #' }, /PromQL label matchers/],
      [{ DNSCTL_METRICS_PROMETHEUS_SELECTOR: 'job=a' }, /PromQL label matchers/],
      [{ DNSCTL_METRICS_PROMETHEUS_SELECTOR: 'job="a\nb"' }, /PromQL label matchers/],
      [{ DNSCTL_METRICS_PROMETHEUS_PREFIX: 'kresd-' }, /metric-name prefix/],
      [{ DNSCTL_METRICS_PROMETHEUS_PREFIX: 'a b' }, /metric-name prefix/],
      [{ DNSCTL_METRICS_PROMETHEUS_TIMEOUT: '10ms' }, /at least 100ms/],
      [{ DNSCTL_METRICS_PROMETHEUS_TIMEOUT: '1h' }, /at most 2m/],
      [{ DNSCTL_METRICS_PROMETHEUS_TIMEOUT: 'soon' }, /duration/],
    ] as const) {
      assert.throws(load(env), message, JSON.stringify(env))
    }
    // Accepted: matchers of every operator, escaped quotes, a path prefix.
    const ok = loadDnsctlConfig([], {
      DNSCTL_STATE_DIR: '/tmp/x',
      DNSCTL_METRICS_PROMETHEUS_URL: 'https://metrics.example/prometheus',
      DNSCTL_METRICS_PROMETHEUS_SELECTOR: 'job="kresd", site=~"ams.*",env!="dev",x!~"a\\"b"',
      DNSCTL_METRICS_PROMETHEUS_PREFIX: 'resolver_',
    })
    assert.equal(ok.metricsPrometheus.prefix, 'resolver_')
  })

  test('Prometheus stopped: the history says so (502), it does not fall back to other data', async () => {
    await prom.stop()
    const res = await h.call('GET', '/v1/metrics/history?range=6h')
    const body = await json(res)
    assert.equal(res.status, 502, JSON.stringify(body))
    assert.equal(body.error.code, 'metrics_upstream_unavailable')
    assert.match(body.error.message, new RegExp(`^Prometheus at ${prom.url.replace(/\./g, '\\.')} is unreachable: `))
  })
})
