/**
 * Findings of the acceptance and security review (issue #12) against a real edgegate
 * process on SQLite and PostgreSQL: every RFC 3339 spelling of an instant is read (and
 * written back with Z), labels cannot carry terminal control characters (API and CLI),
 * and a NUL character is a 400 rather than a PostgreSQL 500.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  call,
  cli,
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

for (const dialect of DIALECTS) {
  describe(`hardening on ${dialect}`, () => {
    let database: string
    let gate: Edgegate
    let tokens: Record<string, string>
    let admin: string
    before(async () => {
      database = await newDatabase(dialect, pg.get)
      ;({ tokens, admin } = await seed(database, [
        { id: 'ssh1', kind: 'sshgate' },
        { id: 'web1', kind: 'websignal' },
      ]))
      gate = await startEdgegate(database, tls)
    })
    after(() => gate?.stop())

    const get = (path: string, token: string) => call(tls, gate.base, path, { token })
    const post = (path: string, body: unknown, token: string) =>
      call(tls, gate.base, path, { method: 'POST', body, token })
    const putDecision = (fp: string, body: unknown) =>
      call(tls, gate.base, `/api/decisions/ssh1/${fp}`, { method: 'PUT', body, token: admin })

    test('since in any RFC 3339 spelling of UTC, or another offset, is the same instant', async () => {
      const put = await putDecision('1'.repeat(32), { status: 'approved' })
      assert.equal(put.status, 200)
      const spellings = [
        '2026-01-01T00:00:00Z',
        '2026-01-01T00:00:00z',
        '2026-01-01t00:00:00Z',
        '2026-01-01T00:00:00+00:00',
        '2026-01-01T01:00:00+01:00',
        '2025-12-31T19:00:00-05:00',
      ]
      const answers: Json[] = []
      for (const since of spellings) {
        const res = await get(`/v1/policy?instance_id=ssh1&since=${encodeURIComponent(since)}`, tokens.ssh1!)
        assert.equal(res.status, 200, `${since}: ${JSON.stringify(res.body)}`)
        answers.push(res.body.decisions.map((d: Json) => d.fingerprint))
        assert.match(res.body.cursor, /Z$/)
      }
      for (const a of answers) assert.deepEqual(a, answers[0])
      assert.ok(answers[0].includes('1'.repeat(32)))
      const bad = await get('/v1/policy?instance_id=ssh1&since=2026-01-01T00:00:00', tokens.ssh1!)
      assert.equal(bad.body.error.code, 'invalid_timestamp')
    })

    test('an observation with +00:00 and z timestamps is accepted and read back in Z', async () => {
      const fp = '2'.repeat(32)
      const ms = Date.now() - 60_000
      const utc = new Date(ms).toISOString()
      const plusOne = `${new Date(ms + 3_600_000).toISOString().slice(0, 23)}+01:00`
      const o = observation(fp, {
        first_seen: utc.replace('Z', '+00:00'),
        last_seen: plusOne,
        sightings: [{ ip: '192.0.2.10', port: 22, last_seen: utc.replace('Z', 'z') }],
      })
      const res = await post(
        '/v1/observations/batch?instance_id=ssh1',
        { instance_id: 'ssh1', observations: [o] },
        tokens.ssh1!,
      )
      assert.equal(res.status, 200, JSON.stringify(res.body))
      const list = await call(tls, gate.base, '/api/fingerprints?instance_id=ssh1', { token: admin })
      assert.equal(list.status, 200, JSON.stringify(list.body))
      const row = list.body.fingerprints.find((f: Json) => f.fingerprint === fp)
      assert.deepEqual([row.first_seen, row.last_seen, row.sightings[0].last_seen], [utc, utc, utc])
    })

    test('a label with a terminal escape, line break or bidi override is refused (API)', async () => {
      const fp = '3'.repeat(32)
      for (const label of ['evil\u001b[2J', 'two\nlines', 'cr\rfake prompt', 'c1 \u009b31m', 'rtl \u202eexe.txt']) {
        const res = await putDecision(fp, { status: 'approved', label })
        assert.equal(res.status, 400, JSON.stringify(label))
        assert.equal(res.body.error.code, 'label_invalid')
      }
      assert.equal((await putDecision(fp, { status: 'approved', label: 'ops laptop — Zoë' })).status, 200)
      const relabel = await putDecision(fp, { label: 'x\u0007' })
      assert.equal(relabel.body.error.code, 'label_invalid')
      const policy = await get('/v1/policy?instance_id=ssh1', tokens.ssh1!)
      assert.deepEqual(
        policy.body.decisions.filter((d: Json) => d.fingerprint === fp).map((d: Json) => d.label),
        ['ops laptop — Zoë'],
      )
    })

    test('a NUL character in a label or a signal is a 400, not a database error', async () => {
      const label = await putDecision('4'.repeat(32), { status: 'approved', label: 'a\u0000b' })
      assert.equal(label.status, 400)
      assert.equal(label.body.error.code, 'invalid_request')
      const signal = {
        event_id: 'ev-nul',
        observed_at: '2026-01-02T03:04:05+00:00',
        host: 'www.example.test',
        site: 'w\u0000w',
        ip: '203.0.113.9',
        trigger: 'suspicious_uri',
        connections: 5,
        errors: 4,
        successes: 1,
        window_seconds: 300,
      }
      const res = await post(
        '/v1/signals/batch?instance_id=web1',
        { instance_id: 'web1', signals: [signal] },
        tokens.web1!,
      )
      assert.equal(res.status, 400)
      assert.equal(res.body.error.path, 'body.signals[0].site')
      const ok = await post(
        '/v1/signals/batch?instance_id=web1',
        { instance_id: 'web1', signals: [{ ...signal, site: 'www' }] },
        tokens.web1!,
      )
      assert.equal(ok.status, 200, JSON.stringify(ok.body))
    })

    if (dialect === 'sqlite') {
      test('the CLI refuses a label with control characters', async () => {
        const fp = '5'.repeat(32)
        const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
        const approve = await run(
          'decision',
          'approve',
          '--instance',
          'ssh1',
          '--label',
          'evil\u001b]52;c;eA==\u0007',
          fp,
        )
        assert.notEqual(approve.code, 0)
        assert.match(approve.stderr, /control characters/)
        assert.equal((await run('decision', 'approve', '--instance', 'ssh1', '--label', 'fine', fp)).code, 0)
        const label = await run('decision', 'label', '--instance', 'ssh1', fp, 'bad\u001b[31m')
        assert.notEqual(label.code, 0)
        assert.doesNotMatch(label.stderr + label.stdout, /\u001b/)
      })
    }
  })
}
