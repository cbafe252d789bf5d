/**
 * Web enforcement end to end: real edgegate processes on PostgreSQL, a TLS gate played through
 * the observation upload and policy APIs, a websignal node uploading signals. The controller's
 * block reaches the gate; the runtime kill switch, a restart with the mode disabled and an
 * expiry all reach it as explicit pending decisions; two processes on one database write one
 * block between them. Also: the new endpoints' authorization and the flags' validation.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openEdgeDatabase } from '../src/db/open.ts'
import { runPass } from '../src/enforcement/service.ts'
import {
  call,
  cli,
  type Edgegate,
  fileServices,
  type Json,
  newDatabase,
  observation,
  seed,
  startEdgegate,
  waitFor,
} from './helpers.ts'
import { settings } from './web-fixtures.ts'

const { pg, tls } = fileServices()

const MIN = 60_000
const FP = 't13d1516h2_scanner'
const iso = (ms: number) => new Date(ms).toISOString()
const ENFORCE = [
  '--web-shadow-enabled',
  '--web-shadow-min-signals',
  '3',
  '--web-enforcement-mode',
  'enforce',
  '--web-enforcement-interval',
  '1s',
]

describe('web enforcement end to end (PostgreSQL)', () => {
  let database: string
  let tokens: Record<string, string>
  let admin: string
  let a: Edgegate
  let b: Edgegate | undefined
  let cursor = ''
  let seq = 0

  /** The gate's pull: decisions for FP since the last cursor. */
  async function pull(g: Edgegate) {
    const q = cursor ? `&since=${encodeURIComponent(cursor)}` : ''
    const res = await call(tls, g.base, `/v1/policy?instance_id=tls-1${q}`, { token: tokens['tls-1'] })
    assert.equal(res.status, 200)
    cursor = res.body.cursor
    return res.body.decisions.filter((d: Json) => d.fingerprint === FP) as Json[]
  }

  async function evidence(g: Edgegate, at: number) {
    const obs = await call(tls, g.base, '/v1/observations/batch?instance_id=tls-1', {
      token: tokens['tls-1'],
      body: {
        instance_id: 'tls-1',
        observations: [
          observation(FP, {
            ips: ['198.51.100.7', '203.0.113.9'],
            ports: [443],
            sightings: [
              { ip: '198.51.100.7', port: 40001, last_seen: iso(at) },
              { ip: '203.0.113.9', port: 40002, last_seen: iso(at) },
            ],
            metadata: { sni: 'shop.example' },
          }),
        ],
      },
    })
    assert.equal(obs.status, 200)
    const sig = (ip: string, site: string) => ({
      event_id: `e2e-${++seq}`,
      observed_at: iso(at),
      host: 'shop.example',
      site,
      ip,
      trigger: 'suspicious_uri',
      connections: 5,
      errors: 5,
      successes: 0,
      window_seconds: 60,
    })
    const res = await call(tls, g.base, '/v1/signals/batch?instance_id=web-1', {
      token: tokens['web-1'],
      body: {
        instance_id: 'web-1',
        signals: [sig('198.51.100.7', 'shop'), sig('203.0.113.9', 'blog'), sig('198.51.100.7', 'shop')],
      },
    })
    assert.equal(res.status, 200)
  }

  before(async () => {
    database = await newDatabase('postgres', pg.get)
    ;({ tokens, admin } = await seed(database, [
      { id: 'tls-1', kind: 'tlsgate' },
      { id: 'web-1', kind: 'websignal' },
    ]))
    a = await startEdgegate(database, tls, ENFORCE)
  })
  after(async () => {
    await a?.stop()
    await b?.stop()
  })

  test('the new endpoints need an administrator', async () => {
    for (const [method, path, body] of [
      ['GET', '/api/web-enforcement', undefined],
      ['PUT', '/api/web-enforcement/kill-switch', { engaged: false }],
      ['GET', '/api/web-candidates', undefined],
      ['GET', '/api/web-pairs', undefined],
      ['PUT', '/api/web-pairs/web-1/tls-1', undefined],
      ['DELETE', '/api/web-pairs/web-1/tls-1', undefined],
    ] as const) {
      const none = await call(tls, a.base, path, { method, ...(body ? { body } : {}) })
      assert.equal(none.status, 401, path)
      const node = await call(tls, a.base, path, { method, token: tokens['tls-1'], ...(body ? { body } : {}) })
      assert.equal(node.status, 403, path)
      assert.equal(node.body.error.code, 'admin_required')
    }
    const bad = await call(tls, a.base, '/api/web-enforcement/kill-switch', {
      method: 'PUT',
      token: admin,
      body: { engaged: 'yes' },
    })
    assert.equal(bad.status, 400)
    const ok = await call(tls, a.base, '/api/web-enforcement', { token: admin })
    assert.equal(ok.status, 200)
    assert.deepEqual([ok.body.enforcement_mode, ok.body.kill_switch.engaged], ['enforce', false])
  })

  test('two processes, one block; the kill switch reaches the gate as pending; release; restart disabled', async () => {
    b = await startEdgegate(database, tls, ENFORCE)
    await pull(a)
    await evidence(a, Date.now() - MIN)
    const blocked = await waitFor('the automated block reaches the gate', async () => {
      const ds = await pull(b!)
      return ds.find((d) => d.status === 'blocked')
    })
    assert.equal(blocked.actor, 'controller:web')
    // Its expiry goes with it, so a gate that cannot reach the control plane still ends it.
    const until = Date.parse(blocked.expires_at)
    assert.ok(until > Date.now() && until < Date.now() + 7 * 86_400_000, blocked.expires_at)
    const report = await call(tls, b.base, '/api/web-candidates', { token: admin })
    const c = report.body.candidates.find((x: Json) => x.fingerprint === FP)
    assert.equal(c.shadow_status, 'already_blocked')
    assert.equal(c.decision.source, 'web-controller')
    // Both processes keep running passes; no evidence is newer, so nothing is written again.
    const d = await openEdgeDatabase(database, 1)
    try {
      const passesWithWrites = async () =>
        (await d.db.selectFrom('audit_log').selectAll().where('action', '=', 'web_enforcement.pass').execute()).length
      assert.equal(await passesWithWrites(), 1)
      for (const g of [a, b]) {
        await waitFor('both processes ran passes', async () => {
          const m = await call(tls, g.base, '/metrics')
          return /edgegate_web_controller_passes_total\{result="ran"\} [1-9]/.test(m.body)
        })
      }
      assert.equal(await passesWithWrites(), 1, 'one block between the two processes, never rewritten')

      const kill = await call(tls, a.base, '/api/web-enforcement/kill-switch', {
        method: 'PUT',
        token: admin,
        body: { engaged: true },
      })
      assert.equal(kill.status, 200)
      assert.deepEqual(
        [kill.body.revoked, kill.body.enforcement_mode, kill.body.kill_switch.engaged],
        [1, 'disabled', true],
      )
      const revoked = await pull(b)
      assert.deepEqual(
        revoked.map((x) => [x.status, x.actor, x.expires_at]),
        [['pending', 'controller:web', undefined]],
      )
      // Engaged: new evidence blocks nothing (the other process obeys too).
      await evidence(b, Date.now())
      const seen = await d.db.selectFrom('audit_log').selectAll().where('action', 'like', 'web_enforcement.%').execute()
      assert.ok(seen.some((x) => x.action === 'web_enforcement.kill_switch.engage' && x.actor.startsWith('admin:')))
      for (const g of [a, b]) {
        const before = await call(tls, g.base, '/metrics')
        const n = Number(/edgegate_web_controller_passes_total\{result="ran"\} (\d+)/.exec(before.body)?.[1] ?? 0)
        await waitFor('another pass ran while engaged', async () => {
          const m = await call(tls, g.base, '/metrics')
          return Number(/edgegate_web_controller_passes_total\{result="ran"\} (\d+)/.exec(m.body)?.[1] ?? 0) > n
        })
      }
      assert.deepEqual(await pull(a), [], 'no block while the kill switch is engaged')

      const release = await call(tls, b.base, '/api/web-enforcement/kill-switch', {
        method: 'PUT',
        token: admin,
        body: { engaged: false },
      })
      assert.equal(release.body.enforcement_mode, 'enforce')
      const again = await waitFor('newer evidence blocks again after release', async () =>
        (await pull(a)).find((x) => x.status === 'blocked'),
      )
      assert.equal(again.actor, 'controller:web')

      // Expiry: a pass whose clock is past the block's expiry (the controller's own function,
      // on the same database) turns it into a pending decision the gate pulls.
      const row = await d.db.selectFrom('decisions').selectAll().where('fingerprint', '=', FP).executeTakeFirstOrThrow()
      await a.stop()
      await b.stop()
      b = undefined
      const expired = await runPass(d.db, d.kind, settings('enforce'), Number(row.expires_ms) + 1)
      assert.equal(expired.revoked, 1)
      a = await startEdgegate(database, tls, ENFORCE)
      const dropped = await pull(a)
      assert.deepEqual(
        dropped.map((x) => [x.status, x.label]),
        [['pending', 'automated block expired']],
      )

      // Restart with the mode disabled: the first pass revokes automated blocks left behind.
      await evidence(a, Date.now())
      await waitFor('blocked again', async () => (await pull(a)).find((x) => x.status === 'blocked'))
      await a.stop()
      a = await startEdgegate(database, tls, ['--web-shadow-enabled'])
      const off = await waitFor('the restart in disabled mode revokes', async () => {
        const ds = await pull(a)
        return ds.length > 0 ? ds : undefined
      })
      assert.deepEqual(
        off.map((x) => [x.status, x.label]),
        [['pending', 'web enforcement disabled']],
      )
    } finally {
      await d.close()
    }
  })

  test('flag validation: every problem in one run, exit 1', async () => {
    const r = await cli([
      'serve',
      '--database',
      database,
      '--tls-cert',
      'x',
      '--tls-key',
      'y',
      '--web-enforcement-mode',
      'canary',
      '--web-shadow-min-error-ratio',
      '1.5',
    ])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /web_shadow_min_error_ratio|web-shadow-min-error-ratio/)
    const r2 = await cli([
      'serve',
      '--database',
      database,
      '--tls-cert',
      'x',
      '--tls-key',
      'y',
      '--web-enforcement-mode',
      'canary',
    ])
    assert.equal(r2.code, 1)
    assert.match(r2.stderr, /needs --web-shadow-enabled/)
    assert.match(r2.stderr, /canary mode needs at least one TLS gate/)
    const r3 = await cli([
      'serve',
      '--database',
      database,
      '--tls-cert',
      'x',
      '--tls-key',
      'y',
      '--web-enforcement-mode',
      'block',
    ])
    assert.equal(r3.code, 1)
    assert.match(r3.stderr, /must be one of disabled, canary, enforce/)
    const r4 = await cli([
      'serve',
      '--database',
      database,
      '--tls-cert',
      'x',
      '--tls-key',
      'y',
      '--web-shadow-proposed-ttl',
      '10s',
    ])
    assert.equal(r4.code, 1)
    assert.match(r4.stderr, /at least 1m/)
    // The other shadow and enforcement flags with bad values: each named, in one run.
    const r5 = await cli([
      'serve',
      '--database',
      database,
      '--tls-cert',
      'x',
      '--tls-key',
      'y',
      '--web-shadow-min-networks',
      '0',
      '--web-shadow-min-signals',
      'many',
      '--web-enforcement-canary-nodes',
      'bad id!',
      '--web-enforcement-interval',
      'soon',
    ])
    assert.equal(r5.code, 1)
    for (const flag of [
      'web-shadow-min-networks',
      'web-shadow-min-signals',
      'web-enforcement-canary-nodes',
      'web-enforcement-interval',
    ]) {
      assert.match(r5.stderr, new RegExp(`--${flag}: `), flag)
    }
    // The two switches: a word that is not a boolean is a usage error (exit 2) naming the flag.
    for (const flag of ['web-shadow-enabled', 'web-shadow-require-multi-scope']) {
      const r = await cli(['serve', '--database', database, '--tls-cert', 'x', '--tls-key', 'y', `--${flag}=maybe`])
      assert.equal(r.code, 2, flag)
      assert.match(r.stderr, new RegExp(`--${flag} takes true or false`), flag)
    }
  })
})
