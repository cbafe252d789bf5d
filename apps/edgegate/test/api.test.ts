/**
 * The node-facing and administrator API against a real edgegate process (HTTPS, test CA),
 * on SQLite and PostgreSQL: authorization for every endpoint, the spec's rules, bad payloads.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { hashToken } from '@gatehouse/kit'
import { createTestCa, metric, waitFor } from '@gatehouse/testkit'
import { openEdgeDatabase } from '../src/db/open.ts'
import { decisionsSince, nodeWithDecisionsSince } from '../src/decisions/store.ts'
import { addNode } from '../src/nodes/service.ts'
import { findByTokenHash } from '../src/nodes/store.ts'
import {
  call,
  DIALECTS,
  type Edgegate,
  fileServices,
  type Json,
  newDatabase,
  now,
  observation,
  seed,
  startEdgegate,
} from './helpers.ts'

const { pg, tls } = fileServices()

const FP = 'a'.repeat(32)

interface NodeCall {
  method: 'GET' | 'POST'
  path: string
  body?: unknown
}
interface NodeEndpoint {
  kinds: string[]
  wrongKind: string
  inactive: string
  req: (id: string) => NodeCall
}

for (const dialect of DIALECTS) {
  describe(`api on ${dialect}`, () => {
    let gate: Edgegate
    let tokens: Record<string, string>
    let admin: string
    const cert = tls.ca.issueClient('gate-cert-1')
    const pinned = tls.ca.issueClient('pinned-by-fingerprint')
    const stranger = tls.ca.issueClient('not-registered')

    let database: string
    before(async () => {
      database = await newDatabase(dialect, pg.get)
      ;({ tokens, admin } = await seed(database, [
        { id: 'ssh1', kind: 'sshgate' },
        { id: 'ssh2', kind: 'sshgate' },
        { id: 'tls1', kind: 'tlsgate' },
        { id: 'tls3', kind: 'tlsgate' },
        { id: 'web1', kind: 'websignal' },
        { id: 'lw1', kind: 'log_watcher' },
        { id: 'web2', kind: 'websignal' },
        { id: 'off1', kind: 'tlsgate', active: false },
        { id: 'off2', kind: 'websignal', active: false },
        { id: 'cert1', kind: 'sshgate', credential: { type: 'cert_name', name: 'gate-cert-1' } },
        { id: 'cert2', kind: 'tlsgate', credential: { type: 'cert_fingerprint', sha256: pinned.fingerprint } },
      ]))
      gate = await startEdgegate(database, tls)
    })
    after(() => gate?.stop())

    const get = (path: string, token?: string) => call(tls, gate.base, path, token ? { token } : {})
    const post = (path: string, body: unknown, token?: string) =>
      call(tls, gate.base, path, { method: 'POST', body, ...(token ? { token } : {}) })

    function smtpReport(instance: string, extra: Record<string, unknown> = {}) {
      return {
        instance_id: instance,
        namespace: 'mx',
        listener: '0.0.0.0:25',
        coverage: { from: '2026-11-22T05:00:00Z', to: '2026-11-22T06:00:00Z' },
        generated_at: '2026-11-22T06:00:01Z',
        replay_id: 'r'.repeat(32),
        counts: { connections: 10, tls_failures: 2 },
        evidence: [{ kind: 'tls_failure', ip: '198.51.100.7', count: 2 }],
        ...extra,
      }
    }

    test('/metrics says when each background job last ended well (a job that stops succeeding is an alert)', async () => {
      // Every job runs once at start-up.
      const text = await waitFor('every job to have ended well once', async () => {
        const t = (await get('/metrics')).body as string
        const jobs = ['retention', 'web_enforcement', 'node_health', 'decision_expiry']
        return jobs.every((job) => metric(t, 'edgegate_job_last_success_timestamp_seconds', { job }) !== undefined) && t
      })
      for (const job of ['retention', 'web_enforcement', 'node_health', 'decision_expiry']) {
        const at = metric(text, 'edgegate_job_last_success_timestamp_seconds', { job })!
        assert.ok(at > Date.now() / 1000 - 600 && at <= Date.now() / 1000 + 1, `${job}: ${at}`)
        assert.equal(metric(text, 'edgegate_job_failures_total', { job }), 0, job)
        assert.ok(metric(text, 'edgegate_job_duration_seconds', { job })! >= 0, job)
      }
    })

    test('every node endpoint: none 401, bad token 401, admin 403, wrong kind 403, inactive 403, wrong instance 403, right 2xx', async () => {
      const endpoints: NodeEndpoint[] = [
        {
          kinds: ['ssh1', 'tls1'],
          wrongKind: 'web1',
          inactive: 'off1',
          req: (id: string) => ({
            method: 'POST',
            path: `/v1/observations/batch?instance_id=${id}`,
            body: { instance_id: id, observations: [] },
          }),
        },
        {
          kinds: ['ssh1', 'tls1'],
          wrongKind: 'lw1',
          inactive: 'off1',
          req: (id: string) => ({ method: 'GET', path: `/v1/policy?instance_id=${id}` }),
        },
        // With a cursor, after the pulls above read the decision clock: on PostgreSQL the token
        // and the decisions are read in one statement (policy/routes.ts), and the same refusals hold.
        {
          kinds: ['ssh1', 'tls1'],
          wrongKind: 'lw1',
          inactive: 'off1',
          req: (id: string) => ({
            method: 'GET',
            path: `/v1/policy?instance_id=${id}&since=${encodeURIComponent('1970-01-01T00:00:00.000000Z')}`,
          }),
        },
        {
          kinds: ['web1', 'lw1'],
          wrongKind: 'ssh1',
          inactive: 'off2',
          req: (id: string) => ({
            method: 'POST',
            path: `/v1/signals/batch?instance_id=${id}`,
            body: { instance_id: id, signals: [] },
          }),
        },
        {
          kinds: ['tls1'],
          wrongKind: 'ssh1',
          inactive: 'off1',
          req: (id: string) => ({
            method: 'POST',
            path: `/v1/smtp/reports?instance_id=${id}`,
            body: smtpReport(id, { namespace: `authz-${Math.random().toString(36).slice(2)}` }),
          }),
        },
      ]
      for (const e of endpoints) {
        const own = e.kinds[0]!
        const r = e.req(own)
        const label = `${r.method} ${r.path}`
        assert.equal(
          (await call(tls, gate.base, r.path, { method: r.method, body: r.body })).status,
          401,
          `${label} none`,
        )
        assert.equal(
          (await call(tls, gate.base, r.path, { method: r.method, body: r.body, token: 'egn_' + 'x'.repeat(43) }))
            .status,
          401,
          `${label} unknown token`,
        )
        assert.equal(
          (await call(tls, gate.base, r.path, { method: r.method, body: r.body, cert: stranger })).status,
          401,
          `${label} unregistered cert`,
        )
        const asAdmin = await call(tls, gate.base, r.path, { method: r.method, body: r.body, token: admin })
        assert.equal(asAdmin.status, 403, `${label} admin`)
        assert.equal(asAdmin.body.error.code, 'node_required')
        const w = e.req(e.wrongKind)
        const wrong = await call(tls, gate.base, w.path, { method: w.method, body: w.body, token: tokens[e.wrongKind] })
        assert.equal(wrong.status, 403, `${label} wrong kind`)
        assert.equal(wrong.body.error.code, 'wrong_node_kind')
        const i = e.req(e.inactive)
        const inactive = await call(tls, gate.base, i.path, {
          method: i.method,
          body: i.body,
          token: tokens[e.inactive],
        })
        assert.equal(inactive.status, 403, `${label} inactive`)
        assert.equal(inactive.body.error.code, 'node_inactive')
        const other = e.kinds.length > 1 ? e.kinds[1]! : 'ssh2'
        const mismatch = await call(tls, gate.base, e.req(other).path, {
          method: r.method,
          body: e.req(other).body,
          token: tokens[own],
        })
        assert.equal(mismatch.status, 403, `${label} wrong instance`)
        assert.equal(mismatch.body.error.code, 'instance_mismatch')
        for (const id of e.kinds) {
          const ok = e.req(id)
          const res = await call(tls, gate.base, ok.path, { method: ok.method, body: ok.body, token: tokens[id] })
          assert.ok(
            res.status === 200 || res.status === 201,
            `${label} as ${id}: ${res.status} ${JSON.stringify(res.body)}`,
          )
        }
      }
    })

    test('every administrator endpoint: none 401, node 403, admin 2xx', async () => {
      const paths = [
        '/api/decisions',
        `/api/decisions/ssh1/${FP}`,
        '/api/fingerprints',
        '/api/nodes',
        '/api/smtp-reports',
        '/api/signals',
        '/api/session',
      ]
      for (const path of paths) {
        assert.equal((await get(path)).status, 401, `${path} none`)
        const asNode = await get(path, tokens.ssh1)
        assert.equal(asNode.status, 403, `${path} node`)
        assert.equal(asNode.body.error.code, 'admin_required')
        const ok = await get(path, admin)
        assert.ok(
          ok.status === 200 || (ok.status === 404 && ok.body.error.code === 'decision_not_found'),
          `${path} admin ${ok.status}`,
        )
      }
      for (const method of ['PUT', 'DELETE'] as const) {
        const path = `/api/decisions/ssh1/${'b'.repeat(32)}`
        const body = method === 'PUT' ? { status: 'pending' } : undefined
        assert.equal((await call(tls, gate.base, path, { method, body })).status, 401)
        assert.equal((await call(tls, gate.base, path, { method, body, token: tokens.ssh1 })).status, 403)
      }
      const put = await call(tls, gate.base, `/api/decisions/ssh1/${'b'.repeat(32)}`, {
        method: 'PUT',
        body: { status: 'pending' },
        token: admin,
      })
      assert.equal(put.status, 200)
      const del = await call(tls, gate.base, `/api/decisions/ssh1/${'b'.repeat(32)}`, {
        method: 'DELETE',
        token: admin,
      })
      assert.equal(del.status, 204)
    })

    test('client-certificate nodes: by certificate name or fingerprint, only when issued by the client CA', async () => {
      const ok = await call(tls, gate.base, '/v1/policy?instance_id=cert1', { cert })
      assert.equal(ok.status, 200)
      assert.deepEqual(ok.body.decisions, [])
      assert.equal(ok.body.trusted_ranges, undefined, 'no discovery configured: trusted_ranges omitted')
      const other = await call(tls, gate.base, '/v1/policy?instance_id=ssh1', { cert })
      assert.equal(other.status, 403)
      const byFingerprint = await call(tls, gate.base, '/v1/policy?instance_id=cert2', { cert: pinned })
      assert.equal(byFingerprint.status, 200, 'a node pinned to its certificate fingerprint')
      // A certificate from another CA is not verified, so it identifies nobody.
      const foreign = createTestCa('Foreign CA')
      try {
        const res = await call(tls, gate.base, '/v1/policy?instance_id=cert1', {
          cert: foreign.issueClient('gate-cert-1'),
        })
        assert.equal(res.status, 401)
      } finally {
        foreign.remove()
      }
    })

    test('client-certificate nodes pull incrementally: their own decisions, and the refusals of a full pull', async () => {
      const pull = (id: string, since: string, as: { cert: Buffer; key: Buffer }) =>
        call(tls, gate.base, `/v1/policy?instance_id=${id}&since=${encodeURIComponent(since)}`, { cert: as })
      // A full pull first reads the decision clock, so the pulls below need no read of it (on
      // PostgreSQL, one statement each).
      const start = (await call(tls, gate.base, '/v1/policy?instance_id=cert1', { cert })).body.cursor
      const fp = '4'.repeat(32)
      for (const id of ['cert1', 'cert2', 'ssh1']) {
        const put = await call(tls, gate.base, `/api/decisions/${id}/${fp}`, {
          method: 'PUT',
          body: { status: 'blocked', label: `for ${id}` },
          token: admin,
        })
        assert.equal(put.status, 200)
      }
      const own = async (id: string, as: { cert: Buffer; key: Buffer }) => {
        const res = await pull(id, start, as)
        assert.equal(res.status, 200, JSON.stringify(res.body))
        return res.body.decisions.map((d: Json) => [d.scope_id, d.fingerprint, d.label])
      }
      assert.deepEqual(await own('cert1', cert), [['cert1', fp, 'for cert1']], 'by certificate name')
      assert.deepEqual(await own('cert2', pinned), [['cert2', fp, 'for cert2']], 'by pinned fingerprint')
      const refused = async (id: string, as: { cert: Buffer; key: Buffer }, status: number, code: string) => {
        const res = await pull(id, start, as)
        assert.equal(res.status, status, `${id}: ${JSON.stringify(res.body)}`)
        assert.equal(res.body.error.code, code)
        assert.equal(res.body.decisions, undefined)
      }
      await refused('ssh1', cert, 403, 'instance_mismatch')
      await refused('cert1', pinned, 403, 'instance_mismatch')
      await refused('cert1', stranger, 401, 'unauthorized')
      const d = await openEdgeDatabase(database, 1)
      try {
        if (dialect === 'postgres') {
          const claims = async (instanceId: string, as: { fingerprint: string }, names: string[]) =>
            (
              await nodeWithDecisionsSince(
                d.db,
                { instanceId, certFingerprint: as.fingerprint, certNames: names },
                0,
                10,
              )
            )?.claims
          assert.deepEqual(await claims('cert1', cert, ['gate-cert-1']), { byFingerprint: 0, byName: 1 })
          assert.deepEqual(await claims('cert2', pinned, ['pinned-by-fingerprint']), { byFingerprint: 1, byName: 0 })
          assert.equal(await claims('nosuch', cert, ['gate-cert-1']), undefined)
        }
        // A second node claiming the same name: the certificate identifies nobody (fail closed).
        await addNode(d.db, 'cert-twin', 'sshgate', { type: 'cert_name', name: 'gate-cert-1' }, 'test')
        await refused('cert1', cert, 401, 'unauthorized')
        await d.db.deleteFrom('nodes').where('instance_id', '=', 'cert-twin').execute()
        await d.db.updateTable('nodes').set({ active: 0 }).where('instance_id', '=', 'cert1').execute()
        await refused('cert1', cert, 403, 'node_inactive')
      } finally {
        await d.db.deleteFrom('nodes').where('instance_id', '=', 'cert-twin').execute()
        await d.db.updateTable('nodes').set({ active: 1 }).where('instance_id', '=', 'cert1').execute()
        await d.close()
      }
      assert.deepEqual(await own('cert1', cert), [['cert1', fp, 'for cert1']])
    })

    test('observations merge within the bounds, keep the IP/port pairing, and a re-sent page changes nothing', async () => {
      const t0 = '2026-11-22T05:00:00.000Z'
      const ips = Array.from({ length: 100 }, (_, i) => `10.0.${i}.1`)
      const page1 = {
        instance_id: 'ssh1',
        observations: [
          observation('c'.repeat(32), {
            first_seen: t0,
            last_seen: now(),
            ips: ips.slice(0, 100),
            ports: [22, 2222],
            sightings: ips
              .slice(0, 100)
              .map((ip, i) => ({ ip, port: 40000 + i, last_seen: new Date(Date.now() - i * 1000).toISOString() })),
            count: 100,
            metadata: { kex_algorithms: 'curve25519-sha256' },
          }),
        ],
      }
      const page2 = {
        instance_id: 'ssh1',
        observations: [
          observation('c'.repeat(32), {
            first_seen: now(),
            last_seen: now(),
            ips: Array.from({ length: 100 }, (_, i) => `::ffff:10.1.${i}.1`),
            ports: [22],
            sightings: Array.from({ length: 100 }, (_, i) => ({
              ip: `10.1.${i}.1`,
              port: 50000 + i,
              last_seen: now(),
            })),
            count: 150,
          }),
        ],
      }
      assert.equal((await post('/v1/observations/batch?instance_id=ssh1', page1, tokens.ssh1)).status, 200)
      assert.equal((await post('/v1/observations/batch?instance_id=ssh1', page2, tokens.ssh1)).status, 200)
      const read = async () =>
        (await get('/api/fingerprints?instance_id=ssh1', admin)).body.fingerprints.find(
          (f: Json) => f.fingerprint === 'c'.repeat(32),
        )
      const first = await read()
      assert.equal(first.count, 150)
      assert.equal(first.first_seen, t0)
      assert.equal(first.ips.length, 128)
      assert.equal(first.ips[0], '10.0.0.1', 'sorted numerically, mapped IPv6 normalised')
      assert.ok(first.ips.every((ip: string) => !ip.includes('ffff')))
      assert.deepEqual(first.ports, [22, 2222])
      assert.equal(first.sightings.length, 128)
      assert.ok(
        first.sightings.every((s: Json) =>
          s.ip.startsWith('10.1.')
            ? s.port === 50000 + Number(s.ip.split('.')[2])
            : s.port === 40000 + Number(s.ip.split('.')[2]),
        ),
        'pairing kept',
      )
      assert.equal(first.metadata.kex_algorithms, 'curve25519-sha256')
      // Re-send both pages: identical state.
      const groups = async () => {
        const text = (await get('/metrics')).body as string
        return {
          sum: Number(metric(text, 'edgegate_observation_group_pages_sum')),
          count: Number(metric(text, 'edgegate_observation_group_pages_count')),
        }
      }
      const before = await groups()
      assert.ok(Number.isInteger(before.sum) && Number.isInteger(before.count), 'group-size histogram exported')
      await post('/v1/observations/batch?instance_id=ssh1', page1, tokens.ssh1)
      await post('/v1/observations/batch?instance_id=ssh1', page2, tokens.ssh1)
      assert.deepEqual(await read(), first)
      // One page after the other: two groups of one page each in the group-size histogram.
      assert.deepEqual(await groups(), { sum: before.sum + 2, count: before.count + 2 })
    })

    test('bad observation payloads get a clear 4xx and nothing is stored', async () => {
      const fp = 'd'.repeat(32)
      const base = (o: Record<string, unknown>, top: Record<string, unknown> = {}) => ({
        instance_id: 'ssh1',
        observations: [observation(fp, o)],
        ...top,
      })
      const cases: Array<[string, unknown, number, string]> = [
        ['unknown field', base({ user_agent: 'x' }), 400, 'invalid_request'],
        ['unknown top-level field', base({}, { extra: 1 }), 400, 'invalid_request'],
        ['oversized metadata', base({ metadata: { ja4: 'x'.repeat(70_000) } }), 413, 'metadata_too_large'],
        ['bad timestamp', base({ last_seen: '2026-02-30T00:00:00Z' }), 400, 'invalid_timestamp'],
        ['timestamp without a zone', base({ last_seen: '2026-11-22T05:00:00' }), 400, 'invalid_request'],
        [
          'first after last',
          base({ first_seen: '2026-11-22T06:00:00Z', last_seen: '2026-11-22T05:00:00Z' }),
          400,
          'invalid_observation',
        ],
        [
          'too many ips',
          base({ ips: Array.from({ length: 129 }, (_, i) => `10.9.0.${i % 250}`) }),
          400,
          'invalid_request',
        ],
        [
          'too many observations',
          {
            instance_id: 'ssh1',
            observations: Array.from({ length: 17 }, (_, i) => observation(`e${i}`.padEnd(32, '0'))),
          },
          400,
          'invalid_request',
        ],
        ['bad ip', base({ ips: ['999.1.1.1'] }), 400, 'invalid_ip'],
        ['bad port', base({ ports: [70000] }), 400, 'invalid_request'],
        ['negative count', base({ count: -1 }), 400, 'invalid_request'],
        ['body instance differs', { ...base({}), instance_id: 'ssh2' }, 400, 'instance_id_mismatch'],
      ]
      for (const [name, body, status, code] of cases) {
        const res = await post('/v1/observations/batch?instance_id=ssh1', body, tokens.ssh1)
        assert.equal(res.status, status, `${name}: ${JSON.stringify(res.body)}`)
        assert.equal(res.body.error.code, code, name)
        assert.equal(typeof res.body.error.message, 'string')
      }
      const bad = await call(tls, gate.base, '/v1/observations/batch?instance_id=ssh1', {
        method: 'POST',
        raw: '{"instance_id":',
        token: tokens.ssh1,
      })
      assert.equal(bad.status, 400)
      const list = (await get('/api/fingerprints?instance_id=ssh1', admin)).body.fingerprints
      assert.ok(!list.some((f: Json) => f.fingerprint === fp || f.fingerprint.startsWith('e')), 'nothing stored')
    })

    test('policy: decisions of the instance after since, a cursor that moves, labels and deletes', async () => {
      const fp = 'f'.repeat(32)
      const full = await get('/v1/policy?instance_id=ssh2', tokens.ssh2)
      assert.equal(full.status, 200)
      const start = full.body.cursor
      const put = await call(tls, gate.base, `/api/decisions/ssh2/${fp}`, {
        method: 'PUT',
        body: { status: 'approved', label: 'ops laptop' },
        token: admin,
      })
      assert.equal(put.status, 200)
      assert.equal(put.body.actor.startsWith('admin:'), true)
      await call(tls, gate.base, `/api/decisions/ssh1/${fp}`, {
        method: 'PUT',
        body: { status: 'blocked' },
        token: admin,
      })
      const inc = await get(`/v1/policy?instance_id=ssh2&since=${encodeURIComponent(start)}`, tokens.ssh2)
      assert.deepEqual(
        inc.body.decisions.map((d: Json) => [d.scope_type, d.scope_id, d.fingerprint, d.status, d.label]),
        [['instance', 'ssh2', fp, 'approved', 'ops laptop']],
      )
      // At least the last decision's time; a last page may move it up to the decision clock.
      assert.ok(inc.body.cursor >= put.body.updated_at)
      assert.equal(inc.body.more, false)
      const again = await get(`/v1/policy?instance_id=ssh2&since=${encodeURIComponent(inc.body.cursor)}`, tokens.ssh2)
      assert.deepEqual(again.body.decisions, [])
      assert.ok(again.body.cursor >= inc.body.cursor, 'the cursor never moves back')
      // Label only: status unchanged, new time, pulled again.
      const label = await call(tls, gate.base, `/api/decisions/ssh2/${fp}`, {
        method: 'PUT',
        body: { label: 'renamed' },
        token: admin,
      })
      assert.equal(label.body.status, 'approved')
      const after = await get(`/v1/policy?instance_id=ssh2&since=${encodeURIComponent(inc.body.cursor)}`, tokens.ssh2)
      assert.deepEqual(
        after.body.decisions.map((d: Json) => d.label),
        ['renamed'],
      )
      assert.equal(
        (
          await call(tls, gate.base, `/api/decisions/ssh2/${'9'.repeat(32)}`, {
            method: 'PUT',
            body: { label: 'x' },
            token: admin,
          })
        ).status,
        404,
      )
      assert.equal(
        (await call(tls, gate.base, `/api/decisions/ssh2/${fp}`, { method: 'PUT', body: {}, token: admin })).body.error
          .code,
        'decision_missing_fields',
      )
      assert.equal(
        (
          await call(tls, gate.base, `/api/decisions/nosuch/${fp}`, {
            method: 'PUT',
            body: { status: 'approved' },
            token: admin,
          })
        ).body.error.code,
        'node_not_found',
      )
      assert.equal(
        (
          await call(tls, gate.base, `/api/decisions/ssh2/${fp}`, {
            method: 'PUT',
            body: { status: 'maybe' },
            token: admin,
          })
        ).status,
        400,
      )
      assert.equal(
        (await get('/v1/policy?instance_id=ssh2&since=yesterday', tokens.ssh2)).body.error.code,
        'invalid_timestamp',
      )
      assert.equal(
        (await call(tls, gate.base, `/api/decisions/ssh2/${fp}`, { method: 'DELETE', token: admin })).status,
        204,
      )
      assert.equal(
        (await call(tls, gate.base, `/api/decisions/ssh2/${fp}`, { method: 'DELETE', token: admin })).status,
        404,
      )
      const listed = await get('/api/decisions?instance_id=ssh1&status=blocked', admin)
      assert.ok(listed.body.decisions.some((d: Json) => d.fingerprint === fp))
    })

    test("an incremental pull: the node its token names and only that node's decisions, as the two reads give them", async () => {
      const fps = ['1', '2', '3'].map((c) => c.repeat(32))
      const start = (await get('/v1/policy?instance_id=tls3', tokens.tls3)).body.cursor
      for (const [i, fp] of fps.entries()) {
        const put = await call(tls, gate.base, `/api/decisions/tls3/${fp}`, {
          method: 'PUT',
          body: { status: i === 1 ? 'blocked' : 'approved', label: `d${i}` },
          token: admin,
        })
        assert.equal(put.status, 200)
        // Another node's decision on the same fingerprint is never in tls3's answer.
        await call(tls, gate.base, `/api/decisions/ssh2/${fp}`, {
          method: 'PUT',
          body: { status: 'blocked' },
          token: admin,
        })
      }
      const since = (cursor: string) => `/v1/policy?instance_id=tls3&since=${encodeURIComponent(cursor)}`
      const inc = await get(since(start), tokens.tls3)
      assert.equal(inc.status, 200)
      assert.deepEqual(
        inc.body.decisions.map((d: Json) => [d.scope_id, d.fingerprint, d.status, d.label]),
        fps.map((fp, i) => ['tls3', fp, i === 1 ? 'blocked' : 'approved', `d${i}`]),
      )
      const after = await get(since(inc.body.decisions[1].updated_at), tokens.tls3)
      assert.deepEqual(
        after.body.decisions.map((d: Json) => d.fingerprint),
        [fps[2]],
      )
      assert.deepEqual((await get(since(inc.body.cursor), tokens.tls3)).body.decisions, [])
      // A node disabled since: refused with its decisions pending for it, none in the answer.
      const d = await openEdgeDatabase(database, 1)
      try {
        await d.db.updateTable('nodes').set({ active: 0 }).where('instance_id', '=', 'tls3').execute()
        const refused = await get(since(start), tokens.tls3)
        assert.equal(refused.status, 403)
        assert.equal(refused.body.error.code, 'node_inactive')
        assert.equal(refused.body.decisions, undefined)
        if (dialect === 'postgres') {
          // The one-statement read itself: the row findByTokenHash gives, and decisionsSince's rows.
          const hash = hashToken(tokens.tls3!)
          const found = await nodeWithDecisionsSince(d.db, { tokenHash: hash }, 0, 100)
          const node = (await findByTokenHash(d.db, hash))!
          // pg gives a bigint column as text, JSON as a number: the same values either way.
          const numeric = (row: object) =>
            Object.fromEntries(
              Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v]),
            )
          assert.deepEqual(numeric(found!.node), numeric(node))
          assert.equal(found!.node.instance_id, 'tls3')
          assert.deepEqual(found!.rows, await decisionsSince(d.db, 'tls3', 0, 100))
          assert.equal(found!.rows.length, 3)
          assert.deepEqual(await nodeWithDecisionsSince(d.db, { tokenHash: hash }, 0, 2), {
            node: found!.node,
            rows: found!.rows.slice(0, 2),
          })
          const last = Number(found!.rows[2]!.updated_us)
          assert.deepEqual((await nodeWithDecisionsSince(d.db, { tokenHash: hash }, last, 100))!.rows, [])
          assert.equal(await nodeWithDecisionsSince(d.db, { tokenHash: hashToken(admin) }, 0, 100), undefined)
        }
      } finally {
        await d.db.updateTable('nodes').set({ active: 1 }).where('instance_id', '=', 'tls3').execute()
        await d.close()
      }
    })

    test("an SSH gate decision's fingerprint must be the spec's 32 hex; upper case is stored as the gates compute it", async () => {
      const put = (instance: string, fp: string, body: unknown = { status: 'approved' }) =>
        call(tls, gate.base, `/api/decisions/${instance}/${encodeURIComponent(fp)}`, {
          method: 'PUT',
          body,
          token: admin,
        })
      const start = (await get('/v1/policy?instance_id=ssh1', tokens.ssh1)).body.cursor
      for (const bad of ['zzz', 'c'.repeat(31), 'c'.repeat(33), 't13d1516h2_8daaf6152771_d8a2da3f94cd']) {
        const r = await put('ssh1', bad)
        assert.equal(r.status, 400, bad)
        assert.equal(r.body.error.code, 'invalid_fingerprint')
        assert.match(r.body.error.message, /32 hexadecimal characters/)
      }
      const web = await put('web1', 'c'.repeat(32))
      assert.deepEqual([web.status, web.body.error.code], [404, 'node_not_found'])
      assert.match(web.body.error.message, /web1 is a websignal node/)
      const none = await get(`/v1/policy?instance_id=ssh1&since=${encodeURIComponent(start)}`, tokens.ssh1)
      assert.deepEqual(none.body.decisions, [], 'nothing the gate could pull was written')

      const upper = await put('ssh1', 'C'.repeat(32), { status: 'blocked', label: 'scanner' })
      assert.equal(upper.status, 200)
      assert.equal(upper.body.fingerprint, 'c'.repeat(32))
      const label = await put('ssh1', 'C'.repeat(32), { label: 'renamed' })
      assert.deepEqual([label.status, label.body.fingerprint, label.body.label], [200, 'c'.repeat(32), 'renamed'])
      const pulled = await get(`/v1/policy?instance_id=ssh1&since=${encodeURIComponent(start)}`, tokens.ssh1)
      assert.deepEqual(
        pulled.body.decisions.map((d: Json) => [d.fingerprint, d.status, d.label]),
        [['c'.repeat(32), 'blocked', 'renamed']],
      )
      // Read as it is written to: upper case finds the stored lower-case decision.
      const read = await get(`/api/decisions/ssh1/${'C'.repeat(32)}`, admin)
      assert.deepEqual([read.status, read.body.fingerprint], [200, 'c'.repeat(32)])
      const unknown = await get('/api/decisions?instance_id=nosuch', admin)
      assert.deepEqual([unknown.status, unknown.body.error.code], [404, 'node_not_found'])
      const del = await call(tls, gate.base, `/api/decisions/ssh1/${'C'.repeat(32)}`, {
        method: 'DELETE',
        token: admin,
      })
      assert.equal(del.status, 204)

      const ja4 = 't13d1516h2_8daaf6152771_d8a2da3f94cd'
      const tlsUpper = await put('tls3', ja4.toUpperCase(), { status: 'blocked' })
      assert.deepEqual([tlsUpper.status, tlsUpper.body.fingerprint], [200, ja4])
      // The spec leaves the TLS form open: a gate of another make may report another one.
      assert.equal((await put('tls3', 'x509-like:AbC', { status: 'blocked' })).status, 200)
    })

    test('deleting a decision: gates pull an explicit pending, administration sees it absent, a verdict revives it', async () => {
      const fp = 'd'.repeat(32)
      const other = 'e'.repeat(32)
      const put = (f: string, body: unknown) =>
        call(tls, gate.base, `/api/decisions/ssh2/${f}`, { method: 'PUT', body, token: admin })
      const del = (f: string) => call(tls, gate.base, `/api/decisions/ssh2/${f}`, { method: 'DELETE', token: admin })
      const pull = (since: string) => get(`/v1/policy?instance_id=ssh2&since=${encodeURIComponent(since)}`, tokens.ssh2)
      // The fingerprint is observed too, so the fingerprint listing shows its decision.
      const obs = await post(
        '/v1/observations/batch?instance_id=ssh2',
        { instance_id: 'ssh2', observations: [observation(fp)] },
        tokens.ssh2,
      )
      assert.equal(obs.status, 200, JSON.stringify(obs.body))
      const approved = await put(fp, { status: 'approved', label: 'laptop' })
      assert.equal(approved.status, 200)
      assert.equal((await put(other, { status: 'blocked' })).status, 200)
      const before = await pull(approved.body.updated_at)
      assert.deepEqual(
        before.body.decisions.map((d: Json) => d.fingerprint),
        [other],
      )
      const sawBefore = (await get('/api/fingerprints?instance_id=ssh2', admin)).body.fingerprints.find(
        (f: Json) => f.fingerprint === fp,
      )
      assert.equal(sawBefore.decision.status, 'approved')

      assert.equal((await del(fp)).status, 204)

      // The policy: the deletion arrives as pending, empty label, the deleter, a newer time and cursor.
      const after = await pull(before.body.cursor)
      assert.equal(after.status, 200)
      assert.equal(after.body.decisions.length, 1)
      const tomb = after.body.decisions[0]
      assert.deepEqual(
        [tomb.scope_type, tomb.scope_id, tomb.fingerprint, tomb.status, tomb.label],
        ['instance', 'ssh2', fp, 'pending', ''],
      )
      assert.match(tomb.actor, /^admin:/)
      assert.ok(tomb.updated_at > before.body.cursor, 'the deletion has a fresh clock time')
      assert.ok(after.body.cursor >= tomb.updated_at)
      assert.deepEqual(Object.keys(tomb).sort(), Object.keys(approved.body).sort(), 'the same decision schema')
      // A full pull also carries it, as pending (a gate that starts over still revokes).
      const full = await get('/v1/policy?instance_id=ssh2', tokens.ssh2)
      const inFull = full.body.decisions.find((d: Json) => d.fingerprint === fp)
      assert.deepEqual([inFull.status, inFull.label, inFull.updated_at], ['pending', '', tomb.updated_at])
      assert.deepEqual((await pull(after.body.cursor)).body.decisions, [], 'nothing new after the cursor')

      // Administration: absent.
      const gone = await get(`/api/decisions/ssh2/${fp}`, admin)
      assert.equal(gone.status, 404)
      assert.equal(gone.body.error.code, 'decision_not_found')
      assert.equal(
        gone.body.error.message,
        `node "ssh2" has no decision on fingerprint "${fp}"`,
        'names what was asked',
      )
      const listAll = (await get('/api/decisions?instance_id=ssh2&limit=1000', admin)).body.decisions
      assert.ok(!listAll.some((d: Json) => d.fingerprint === fp), 'lists exclude it')
      assert.ok(listAll.some((d: Json) => d.fingerprint === other))
      const listPending = (await get('/api/decisions?instance_id=ssh2&status=pending', admin)).body.decisions
      assert.ok(!listPending.some((d: Json) => d.fingerprint === fp), 'not even as pending')
      const seen = (await get('/api/fingerprints?instance_id=ssh2', admin)).body.fingerprints.find(
        (f: Json) => f.fingerprint === fp,
      )
      assert.equal(seen.decision, null)
      const again = await del(fp)
      assert.equal(again.status, 404)
      assert.equal(again.body.error.code, 'decision_not_found')
      const relabel = await put(fp, { label: 'x' })
      assert.equal(relabel.status, 404)
      assert.equal(relabel.body.error.code, 'decision_not_found')
      assert.deepEqual((await pull(after.body.cursor)).body.decisions, [], 'refused changes wrote nothing')

      // A verdict revives it normally: no old label, a newer time, pulled again.
      const revived = await put(fp, { status: 'blocked' })
      assert.equal(revived.status, 200)
      assert.deepEqual([revived.body.status, revived.body.label], ['blocked', ''])
      assert.ok(revived.body.updated_at > tomb.updated_at)
      assert.equal((await get(`/api/decisions/ssh2/${fp}`, admin)).body.status, 'blocked')
      assert.ok(
        (await get('/api/decisions?instance_id=ssh2&status=blocked', admin)).body.decisions.some(
          (d: Json) => d.fingerprint === fp,
        ),
      )
      const back = await pull(after.body.cursor)
      assert.deepEqual(
        back.body.decisions.map((d: Json) => [d.fingerprint, d.status, d.updated_at]),
        [[fp, 'blocked', revived.body.updated_at]],
      )
      assert.equal((await put(fp, { label: 'known scanner' })).body.label, 'known scanner')
      assert.equal((await del(fp)).status, 204, 'and can be deleted again')
      assert.equal((await pull(back.body.cursor)).body.decisions.at(-1).status, 'pending')
    })

    test('signals: strict schema, no raw target or user agent, idempotent by (node, event_id)', async () => {
      const signal = (id: string, extra: Record<string, unknown> = {}) => ({
        event_id: id,
        observed_at: now(),
        host: 'www.example.test',
        site: 'www',
        ip: '203.0.113.9',
        trigger: 'suspicious_uri',
        connections: 5,
        errors: 4,
        successes: 1,
        window_seconds: 300,
        ...extra,
      })
      const first = await post(
        '/v1/signals/batch?instance_id=web1',
        { instance_id: 'web1', signals: [signal('ev-1'), signal('ev-2')] },
        tokens.web1,
      )
      assert.deepEqual(first.body, { accepted: 2, duplicates: 0 })
      const again = await post(
        '/v1/signals/batch?instance_id=web1',
        { instance_id: 'web1', signals: [signal('ev-1'), signal('ev-3')] },
        tokens.web1,
      )
      assert.deepEqual(again.body, { accepted: 1, duplicates: 1 })
      // Another producer may use the same event id: its own key.
      const legacy = await post(
        '/v1/signals/batch?instance_id=lw1',
        { instance_id: 'lw1', signals: [signal('ev-1')] },
        tokens.lw1,
      )
      assert.deepEqual(legacy.body, { accepted: 1, duplicates: 0 })
      for (const field of ['request_uri', 'target', 'path', 'user_agent', 'url']) {
        const res = await post(
          '/v1/signals/batch?instance_id=web1',
          { instance_id: 'web1', signals: [signal(`raw-${field}`, { [field]: '/admin?password=hunter2' })] },
          tokens.web1,
        )
        assert.equal(res.status, 400, field)
        assert.match(res.body.error.message, /unknown field/)
        assert.ok(!JSON.stringify(res.body).includes('hunter2'))
      }
      const bad = await post(
        '/v1/signals/batch?instance_id=web1',
        { instance_id: 'web1', signals: [signal('ok-1'), signal('bad-ts', { observed_at: 'now' })] },
        tokens.web1,
      )
      assert.equal(bad.status, 400)
      const stored = (await get('/api/signals?limit=1000', admin)).body.signals
      assert.equal(stored.length, 4)
      assert.ok(
        !stored.some((s: Json) => s.event_id.startsWith('raw-') || s.event_id === 'ok-1'),
        'nothing stored from refused batches',
      )
      assert.ok(stored.every((s: Json) => !('user_agent' in s) && !('request_uri' in s)))
    })

    test('signals: a publisher epoch below the highest seen is refused (409), as is none once one was seen', async () => {
      const send = (id: string, epoch?: number) =>
        post(
          '/v1/signals/batch?instance_id=web2',
          {
            instance_id: 'web2',
            signals: [
              {
                event_id: id,
                observed_at: now(),
                host: 'www.example.test',
                site: 'www',
                ip: '203.0.113.10',
                trigger: 'suspicious_uri',
                connections: 3,
                errors: 3,
                successes: 0,
                window_seconds: 300,
              },
            ],
            ...(epoch === undefined ? {} : { epoch }),
          },
          tokens.web2,
        )
      assert.equal((await send('e-legacy')).status, 200, 'no epoch while none was seen (legacy publishers)')
      assert.equal((await send('e-100', 100)).status, 200)
      assert.equal((await send('e-100b', 100)).status, 200, 'the same epoch keeps publishing')
      const stale = await send('e-99', 99)
      assert.equal(stale.status, 409)
      assert.equal(stale.body.error.code, 'stale_publisher_epoch')
      assert.equal((await send('e-none')).status, 409, 'no epoch once one was seen')
      assert.equal((await send('e-200', 200)).status, 200, 'a newer publisher takes over')
      assert.equal((await send('e-100c', 100)).status, 409, 'and the old one is fenced off')
      const stored = (await get('/api/signals?limit=1000', admin)).body.signals as Json[]
      const ids = stored
        .filter((x) => x.instance_id === 'web2')
        .map((x) => x.event_id)
        .sort()
      assert.deepEqual(ids, ['e-100', 'e-100b', 'e-200', 'e-legacy'], 'refused batches stored nothing')
    })

    test('a certificate node: the expiry of the certificate it presented is recorded and listed', async () => {
      const res = await call(tls, gate.base, '/v1/policy?instance_id=cert1', { cert })
      assert.equal(res.status, 200)
      const expected = new X509Certificate(cert.cert).validToDate.toISOString()
      await waitFor('the expiry recorded', async () => {
        const nodes = (await get('/api/nodes', admin)).body.nodes as Json[]
        const n = nodes.find((x) => x.instance_id === 'cert1')
        return n?.certificate_expires_at === expected
      })
      const token = ((await get('/api/nodes', admin)).body.nodes as Json[]).find((x) => x.instance_id === 'ssh1')
      assert.equal(token.certificate_expires_at, null, 'a token node has none')
    })

    test('a node whose clock runs ahead: its future times are recorded as received, counted, and the node named once', async () => {
      const nextYear = new Date(Date.now() + 365 * 86_400_000).toISOString()
      const soon = new Date(Date.now() + 20_000).toISOString() // within the tolerance: kept as sent
      const fp = 'f'.repeat(32)
      const sent = Date.now()
      const obs = await post(
        '/v1/observations/batch?instance_id=ssh2',
        {
          instance_id: 'ssh2',
          observations: [
            observation(fp, {
              first_seen: nextYear,
              last_seen: nextYear,
              sightings: [
                { ip: '198.51.100.20', port: 40000, last_seen: nextYear },
                { ip: '198.51.100.21', port: 40001, last_seen: soon },
              ],
            }),
          ],
        },
        tokens.ssh2,
      )
      assert.equal(obs.status, 200, JSON.stringify(obs.body))
      const row = (await get('/api/fingerprints?instance_id=ssh2&limit=1000', admin)).body.fingerprints.find(
        (f: Json) => f.fingerprint === fp,
      )
      const arrived = (t: string) => Date.parse(t) >= sent - 1000 && Date.parse(t) <= Date.now() + 1000
      assert.ok(
        arrived(row.first_seen) && arrived(row.last_seen),
        `dated on arrival: ${row.first_seen} ${row.last_seen}`,
      )
      const byIp = Object.fromEntries(row.sightings.map((s: Json) => [s.ip, s.last_seen]))
      assert.ok(arrived(byIp['198.51.100.20']), byIp['198.51.100.20'])
      assert.equal(Date.parse(byIp['198.51.100.21']), Date.parse(soon), 'a clock 20 s ahead is within the tolerance')
      // A first_seen after last_seen is still the sender's mistake, whatever the clock.
      const reversed = await post(
        '/v1/observations/batch?instance_id=ssh2',
        { instance_id: 'ssh2', observations: [observation(fp, { first_seen: nextYear, last_seen: now() })] },
        tokens.ssh2,
      )
      assert.equal(reversed.status, 400)

      const sig = await post(
        '/v1/signals/batch?instance_id=web1',
        {
          instance_id: 'web1',
          signals: [
            {
              event_id: 'future-1',
              observed_at: nextYear,
              host: 'www.example.test',
              site: 'www',
              ip: '203.0.113.30',
              trigger: 'suspicious_uri',
              connections: 2,
              errors: 2,
              successes: 0,
              window_seconds: 300,
            },
          ],
        },
        tokens.web1,
      )
      assert.deepEqual(sig.body, { accepted: 1, duplicates: 0 })
      const stored = (await get('/api/signals?limit=1000', admin)).body.signals.find(
        (s: Json) => s.event_id === 'future-1',
      )
      assert.ok(arrived(stored.observed_at), stored.observed_at)

      // An SMTP report dated next year would make every later report stale (409).
      const ahead = await post(
        '/v1/smtp/reports?instance_id=tls1',
        smtpReport('tls1', { namespace: 'clock-ahead', generated_at: nextYear, replay_id: 'y'.repeat(32) }),
        tokens.tls1,
      )
      assert.equal(ahead.status, 201, JSON.stringify(ahead.body))
      const next = await post(
        '/v1/smtp/reports?instance_id=tls1',
        smtpReport('tls1', { namespace: 'clock-ahead', generated_at: now(), replay_id: 'z'.repeat(32) }),
        tokens.tls1,
      )
      assert.deepEqual([next.status, next.body], [200, { result: 'replaced' }])

      const text = (await get('/metrics')).body as string
      assert.equal(Number(metric(text, 'edgegate_smtp_report_future_timestamps_total')), 1)
      assert.equal(Number(metric(text, 'edgegate_observation_future_timestamps_total')), 3)
      assert.equal(Number(metric(text, 'edgegate_signal_future_timestamps_total')), 1)
      await waitFor('the warning naming the node', () =>
        /node ssh2 sent observations dated up to 315\d{5} s ahead of this server's clock/.test(gate.child.log()),
      )
      await waitFor('the signal warning', () => /node web1 sent signals dated up to/.test(gate.child.log()))
    })

    test('SMTP reports: replay is a no-op, newer replaces, older or equal is 409, isolated from policy', async () => {
      const r1 = smtpReport('tls1')
      assert.equal((await post('/v1/smtp/reports?instance_id=tls1', r1, tokens.tls1)).status, 201)
      const replay = await post('/v1/smtp/reports?instance_id=tls1', r1, tokens.tls1)
      assert.equal(replay.status, 200)
      assert.deepEqual(replay.body, { result: 'unchanged' })
      const equalGen = await post(
        '/v1/smtp/reports?instance_id=tls1',
        { ...r1, replay_id: 's'.repeat(32), counts: { connections: 11 } },
        tokens.tls1,
      )
      assert.equal(equalGen.status, 409)
      assert.equal(equalGen.body.error.code, 'smtp_report_stale')
      const older = await post(
        '/v1/smtp/reports?instance_id=tls1',
        { ...r1, replay_id: 't'.repeat(32), generated_at: '2026-11-22T05:59:00Z' },
        tokens.tls1,
      )
      assert.equal(older.status, 409)
      const newer = {
        ...r1,
        replay_id: 'u'.repeat(32),
        generated_at: '2026-11-22T07:00:00Z',
        counts: { connections: 99 },
      }
      const replaced = await post('/v1/smtp/reports?instance_id=tls1', newer, tokens.tls1)
      assert.deepEqual(replaced.body, { result: 'replaced' })
      // Another listener is its own slot.
      assert.equal(
        (await post('/v1/smtp/reports?instance_id=tls1', { ...r1, listener: '[::]:587' }, tokens.tls1)).status,
        201,
      )
      const bad = await post(
        '/v1/smtp/reports?instance_id=tls1',
        { ...r1, listener: '[::]:465', coverage: { from: '2026-11-22T07:00:00Z', to: '2026-11-22T06:00:00Z' } },
        tokens.tls1,
      )
      assert.equal(bad.status, 400)
      const mismatch = await post('/v1/smtp/reports?instance_id=tls1', { ...r1, instance_id: 'other' }, tokens.tls1)
      assert.equal(mismatch.body.error.code, 'instance_id_mismatch')
      const reports = (await get('/api/smtp-reports', admin)).body.reports.filter((r: Json) => r.namespace === 'mx')
      assert.deepEqual(
        reports.map((r: Json) => [r.listener, r.counts.connections]),
        [
          ['0.0.0.0:25', 99],
          ['[::]:587', 10],
        ],
      )
      const policy = await get('/v1/policy?instance_id=tls1', tokens.tls1)
      assert.deepEqual(policy.body.decisions, [])
    })
  })
}
