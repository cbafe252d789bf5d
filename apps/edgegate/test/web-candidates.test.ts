/**
 * GET /api/web-candidates against real edgegate processes, on SQLite and PostgreSQL. A
 * tlsgate node (played through the observation upload API) reports sightings with an SNI;
 * websignal nodes upload signals. Checks: authorization, the five-minute window at its edges,
 * the same-host rule, grouping by gate and fingerprint with aggregate evidence, every shadow
 * status, the query's validation (also fuzzed), and that the report never writes a decision.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { openEdgeDatabase } from '../src/db/open.ts'
import {
  call,
  DIALECTS,
  type Edgegate,
  fileServices,
  type Json,
  newDatabase,
  observation,
  seed,
  startEdgegate,
} from './helpers.ts'

const { pg, tls } = fileServices()

const MIN = 60_000
const iso = (ms: number) => new Date(ms).toISOString()
const FP = { a: 't13d1516h2_aaaa', b: 't13d1516h2_bbbb', c: 't13d1516h2_cccc', d: 't13d1516h2_dddd', e: 't13d_eeee' }

let seq = 0
function signal(ip: string, at: number, extra: Record<string, unknown> = {}) {
  return {
    event_id: `ev-${++seq}`,
    observed_at: iso(at),
    host: 'shop.example',
    site: 'shop',
    ip,
    trigger: 'suspicious_uri',
    connections: 10,
    errors: 8,
    successes: 2,
    window_seconds: 60,
    ...extra,
  }
}

function tlsObservation(fp: string, sni: string, sightings: Array<[string, number]>) {
  return observation(fp, {
    ips: [...new Set(sightings.map(([ip]) => ip))],
    ports: [443],
    sightings: sightings.map(([ip, at], i) => ({ ip, port: 40000 + i, last_seen: iso(at) })),
    metadata: { sni, ja4: fp },
  })
}

for (const dialect of DIALECTS) {
  describe(`web candidates on ${dialect}`, () => {
    let plain: Edgegate
    let shadow: Edgegate
    let database: string
    let tokens: Record<string, string>
    let admin: string
    const T = Date.now() - 12 * MIN

    const upload = async (instance: string, path: string, body: unknown) => {
      const res = await call(tls, plain.base, `${path}?instance_id=${instance}`, { token: tokens[instance], body })
      assert.equal(res.status, 200, JSON.stringify(res.body))
    }
    const report = (g: Edgegate, query = 'window=30m', token = admin) =>
      call(tls, g.base, `/api/web-candidates?${query}`, { token })
    const find = (body: Json, gate: string, fp: string) =>
      body.candidates.find((c: Json) => c.instance_id === gate && c.fingerprint === fp)

    before(async () => {
      database = await newDatabase(dialect, pg.get)
      ;({ tokens, admin } = await seed(database, [
        { id: 'tls-1', kind: 'tlsgate' },
        { id: 'tls-2', kind: 'tlsgate' },
        { id: 'ssh-1', kind: 'sshgate' },
        { id: 'web-1', kind: 'websignal' },
        { id: 'web-2', kind: 'log_watcher' },
      ]))
      plain = await startEdgegate(database, tls)
      shadow = await startEdgegate(database, tls, [
        '--web-shadow-enabled',
        '--web-shadow-min-networks',
        '2',
        '--web-shadow-min-signals',
        '3',
        '--web-shadow-min-error-ratio',
        '0.5',
        '--web-shadow-proposed-ttl',
        '2h',
      ])
      // tls-1 saw fingerprint a from two client networks, b from one address; tls-2 saw c.
      await upload('tls-1', '/v1/observations/batch', {
        instance_id: 'tls-1',
        observations: [
          tlsObservation(FP.a, 'Shop.Example.', [
            ['198.51.100.7', T],
            ['203.0.113.9', T],
          ]),
          tlsObservation(FP.b, 'shop.example', [['192.0.2.50', T]]),
          tlsObservation(FP.d, 'shop.example', [['192.0.2.60', T]]),
          tlsObservation(FP.e, 'other.example', [['192.0.2.70', T]]),
        ],
      })
      await upload('tls-2', '/v1/observations/batch', {
        instance_id: 'tls-2',
        observations: [tlsObservation(FP.c, 'shop.example', [['192.0.2.80', T]])],
      })
      // An SSH gate's sightings never count as TLS evidence.
      await upload('ssh-1', '/v1/observations/batch', {
        instance_id: 'ssh-1',
        observations: [observation('f'.repeat(32), { sightings: [{ ip: '192.0.2.90', port: 22, last_seen: iso(T) }] })],
      })
      await upload('web-1', '/v1/signals/batch', {
        instance_id: 'web-1',
        signals: [
          // fingerprint a: the window's edges, both networks, two sites
          signal('198.51.100.7', T + 5 * MIN),
          signal('198.51.100.7', T - 5 * MIN, { site: 'blog', errors: 1, successes: 9, connections: 10 }),
          signal('198.51.100.7', T + 5 * MIN + 1),
          signal('198.51.100.7', T - 5 * MIN - 1),
          signal('203.0.113.9', T),
          // fingerprint b: one address only
          signal('192.0.2.50', T),
          signal('192.0.2.50', T + MIN),
          signal('192.0.2.50', T + 2 * MIN),
          // fingerprint d: same IP, another host: not the same host
          signal('192.0.2.60', T, { host: 'admin.example' }),
          // fingerprint e: sighting for other.example, signal for shop.example
          signal('192.0.2.70', T),
          // no sighting of this address at all
          signal('192.0.2.99', T),
          signal('192.0.2.90', T),
        ],
      })
      await upload('web-2', '/v1/signals/batch', {
        instance_id: 'web-2',
        signals: [
          signal('192.0.2.80', T),
          signal('192.0.2.80', T + MIN),
          signal('198.51.100.7', T + MIN),
          // The same host with a port and in capitals.
          signal('192.0.2.80', T + 2 * MIN, { host: 'SHOP.example:8443' }),
        ],
      })
    })
    after(async () => {
      await plain?.stop()
      await shadow?.stop()
    })

    test('authorization: none 401, a node 403, an administrator 200', async () => {
      assert.equal((await call(tls, plain.base, '/api/web-candidates')).status, 401)
      const node = await report(plain, '', tokens['tls-1'])
      assert.equal(node.status, 403)
      assert.equal(node.body.error.code, 'admin_required')
      const web = await report(plain, '', tokens['web-1'])
      assert.equal(web.body.error.code, 'admin_required')
      const ok = await report(plain, '')
      assert.equal(ok.status, 200)
      assert.equal(ok.body.enforcement_mode, 'disabled')
      assert.equal(ok.body.window_seconds, 15 * 60, 'the default window is 15m')
    })

    test('grouping by gate and fingerprint; the five-minute window inclusive at its edges; same host', async () => {
      const res = await report(plain)
      assert.equal(res.status, 200)
      assert.equal(res.body.shadow_enabled, false)
      const keys = res.body.candidates.map((c: Json) => `${c.instance_id}/${c.fingerprint}`).sort()
      assert.deepEqual(keys, [`tls-1/${FP.a}`, `tls-1/${FP.b}`, `tls-2/${FP.c}`])
      const a = find(res.body, 'tls-1', FP.a)
      // T±5m match (inclusive), T±(5m+1ms) do not; web-2's signal at T+1m matches too.
      assert.equal(a.signals, 4)
      assert.equal(a.connections, 40)
      assert.equal(a.errors, 25)
      assert.equal(a.successes, 15)
      assert.equal(a.error_ratio, 0.625)
      assert.equal(a.ip_count, 2)
      assert.deepEqual(a.networks, ['198.51.100.0/24', '203.0.113.0/24'])
      assert.deepEqual(a.sites, ['blog', 'shop'])
      assert.deepEqual(a.nodes, ['web-1', 'web-2'])
      assert.equal(a.cross_site, true)
      assert.equal(a.cross_node, true)
      assert.equal(a.first_at, iso(T - 5 * MIN))
      assert.equal(a.last_at, iso(T + 5 * MIN))
      assert.equal(a.decision, null)
      assert.equal(a.shadow_status, undefined, 'no shadow fields while the shadow policy is disabled')
      for (const c of res.body.candidates) {
        for (const k of Object.keys(c)) assert.doesNotMatch(k, /target|uri|path|agent/, 'no raw request target')
      }
      const b = find(res.body, 'tls-1', FP.b)
      assert.deepEqual([b.signals, b.network_count, b.cross_site, b.cross_node], [3, 1, false, false])
      assert.equal(find(res.body, 'tls-2', FP.c).signals, 3, 'SHOP.example:8443 is the host shop.example')
      // A narrower interval: `since` starts it, `window` sets its length.
      const early = await report(plain, `since=${encodeURIComponent(iso(T - 6 * MIN))}&window=2m`)
      assert.equal(early.status, 200)
      assert.deepEqual(
        early.body.candidates.map((c: Json) => [c.fingerprint, c.signals]),
        [[FP.a, 1]],
      )
      assert.equal(early.body.from, iso(T - 6 * MIN))
      assert.equal(early.body.to, iso(T - 4 * MIN))
    })

    test('shadow statuses: would_block, insufficient_evidence, protected, already_blocked; never writes', async () => {
      const decisions = async () => {
        const d = await openEdgeDatabase(database, 1)
        try {
          return await d.db.selectFrom('decisions').selectAll().orderBy('scope_id').orderBy('fingerprint').execute()
        } finally {
          await d.close()
        }
      }
      const before0 = await decisions()
      const res = await report(shadow)
      assert.equal(res.status, 200)
      assert.equal(res.body.shadow_enabled, true)
      const a = find(res.body, 'tls-1', FP.a)
      assert.equal(a.shadow_status, 'would_block')
      assert.deepEqual(
        a.shadow_reasons.map((r: string) => r.split(':')[0]),
        ['min_signals', 'min_networks', 'min_error_ratio', 'multi_scope'],
      )
      const proposed = Date.parse(a.proposed_expires_at)
      assert.ok(proposed > Date.now() + 119 * MIN && proposed <= Date.now() + 120 * MIN, a.proposed_expires_at)
      const b = find(res.body, 'tls-1', FP.b)
      assert.equal(b.shadow_status, 'insufficient_evidence')
      assert.deepEqual(b.shadow_reasons, ['min_networks: 1 of 2', 'multi_scope: 1 site(s), 1 node(s)'])
      assert.equal(b.proposed_expires_at, null)
      assert.deepEqual(await decisions(), before0, 'the report wrote nothing')

      // A manual approval protects; a manual block is already_blocked.
      const put = (gate: string, fp: string, status: string) =>
        call(tls, shadow.base, `/api/decisions/${gate}/${fp}`, { method: 'PUT', token: admin, body: { status } })
      assert.equal((await put('tls-1', FP.a, 'approved')).status, 200)
      assert.equal((await put('tls-2', FP.c, 'blocked')).status, 200)
      const before1 = await decisions()
      const again = await report(shadow)
      const pa = find(again.body, 'tls-1', FP.a)
      assert.equal(pa.shadow_status, 'protected')
      assert.match(pa.shadow_reasons[0], /^manual_approved: approved by admin:/)
      assert.equal(pa.decision.status, 'approved')
      assert.equal(pa.decision.source, 'manual')
      const pc = find(again.body, 'tls-2', FP.c)
      assert.equal(pc.shadow_status, 'already_blocked')
      assert.match(pc.shadow_reasons[0], /^manual_blocked/)
      assert.deepEqual(await decisions(), before1, 'the report wrote nothing')
      // A manual pending decision does not protect.
      assert.equal((await put('tls-1', FP.a, 'pending')).status, 200)
      assert.equal(find((await report(shadow)).body, 'tls-1', FP.a).shadow_status, 'would_block')
    })

    test('node pairing: a paired websignal node matches its TLS gate whatever the SNI', async () => {
      const path = '/api/web-pairs/web-1/tls-1'
      assert.equal((await call(tls, plain.base, path, { method: 'PUT' })).status, 401)
      const node = await call(tls, plain.base, path, { method: 'PUT', token: tokens['web-1'] })
      assert.equal(node.body.error.code, 'admin_required')
      const wrong = await call(tls, plain.base, '/api/web-pairs/tls-1/web-1', { method: 'PUT', token: admin })
      assert.equal(wrong.status, 400)
      assert.equal(wrong.body.error.code, 'invalid_pair')
      assert.equal((await call(tls, plain.base, path, { method: 'PUT', token: admin })).status, 204)
      assert.equal((await call(tls, plain.base, path, { method: 'PUT', token: admin })).status, 204, 'idempotent')
      const list = await call(tls, plain.base, '/api/web-pairs', { token: admin })
      assert.deepEqual(
        list.body.pairs.map((p: Json) => [p.websignal_id, p.tlsgate_id]),
        [['web-1', 'tls-1']],
      )
      const paired = await report(plain)
      const keys = paired.body.candidates.map((c: Json) => `${c.instance_id}/${c.fingerprint}`).sort()
      // d (signal for admin.example) and e (sighting for other.example) now match through the pairing;
      // tls-2 is not paired, and the window still applies.
      assert.deepEqual(keys, [`tls-1/${FP.a}`, `tls-1/${FP.b}`, `tls-1/${FP.d}`, `tls-1/${FP.e}`, `tls-2/${FP.c}`])
      assert.equal(find(paired.body, 'tls-1', FP.a).signals, 4, 'a signal matched by both rules counts once')
      assert.equal((await call(tls, plain.base, path, { method: 'DELETE', token: admin })).status, 204)
      const gone = await call(tls, plain.base, path, { method: 'DELETE', token: admin })
      assert.equal(gone.status, 404)
      assert.equal(gone.body.error.code, 'pair_not_found')
      assert.equal((await report(plain)).body.candidates.length, 3)
    })

    test('bad query values: clear 400s', async () => {
      const cases: Array<[string, string]> = [
        ['window=31m', 'invalid_window'],
        ['window=0s', 'invalid_window'],
        ['window=banana', 'invalid_window'],
        ['window=-5m', 'invalid_window'],
        ['since=yesterday', 'invalid_timestamp'],
        ['since=2026-02-30T00:00:00Z', 'invalid_timestamp'],
        [`since=${encodeURIComponent(iso(Date.now() + 3_600_000))}`, 'invalid_since'],
        ['limit=5', 'invalid_request'],
      ]
      for (const [q, code] of cases) {
        const res = await report(plain, q)
        assert.equal(res.status, 400, q)
        assert.equal(res.body.error.code, code, q)
      }
    })

    test('fuzzed window and since values: 200 or a coded 400, never anything else', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.option(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('1s', '30m', '29m59s', '1h', '30m1ms'))),
          fc.option(
            fc.oneof(
              fc.string({ maxLength: 30 }),
              fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            ),
          ),
          async (window, since) => {
            const q = new URLSearchParams()
            if (window !== null) q.set('window', window)
            if (since !== null) q.set('since', since)
            const res = await report(plain, q.toString())
            assert.ok(res.status === 200 || res.status === 400, `${res.status} for ${q}`)
            if (res.status === 400) {
              assert.match(res.body.error.code, /^(invalid_window|invalid_timestamp|invalid_since|invalid_request)$/)
            }
          },
        ),
        { numRuns: 40 },
      )
    })
  })
}
