/**
 * `edgegate status`, `decision list` and `fingerprint list` as child processes against a real
 * server's database, on SQLite and PostgreSQL; and the config file the admin commands read.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { freePort, loadedPackages, tempDir, waitFor } from '@gatehouse/testkit'
import { audit } from '../src/admins/store.ts'
import { openEdgeDatabase } from '../src/db/open.ts'
import {
  call,
  cli,
  DIALECTS,
  type Json,
  lazyPostgres,
  MAIN,
  makeTls,
  newDatabase,
  observation,
  seed,
  startEdgegate,
} from './helpers.ts'

const tls = makeTls()
const pg = lazyPostgres()
after(async () => {
  await pg.stop()
  tls.ca.remove()
})

const A = 'a'.repeat(32)
const B = 'b'.repeat(32)
const C = 'c'.repeat(32)

for (const dialect of DIALECTS) {
  describe(`edgegate reports (${dialect})`, () => {
    test('status, decision list and fingerprint list: tables, filters and --json', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      assert.equal((await run('migrate')).code, 0)

      const empty = await run('status')
      assert.equal(empty.code, 0, empty.stderr)
      assert.match(empty.stdout, new RegExp(`^database: ${dialect} `, 'm'))
      assert.match(empty.stdout, /^nodes: 0 registered, 0 active, 0 seen in the last 24 hours$/m)
      assert.match(empty.stdout, /^no nodes yet: edgegate node add/m)
      // Run as bin/edgegate in a checkout, the next step is printed that way, ready to paste.
      const typed = await cli(['status'], { EDGEGATE_DATABASE: database, GATEHOUSE_INVOKED_AS: 'bin/edgegate' })
      assert.match(typed.stdout, /^no nodes yet: bin\/edgegate node add --kind sshgate INSTANCE_ID$/m)
      // Empty lists say so in words, with the next step; their JSON is an empty array.
      const none = await run('decision', 'list')
      assert.deepEqual(
        [none.code, none.stdout],
        [
          0,
          'no decisions yet: edgegate decision block --instance INSTANCE_ID FINGERPRINT makes one; gates report what they see (fingerprint list)\n',
        ],
      )
      assert.equal((await run('decision', 'list', '--json')).stdout, '[]\n')
      assert.match((await run('fingerprint', 'list')).stdout, /^no fingerprints yet: the gates report/)
      assert.match((await run('node', 'list')).stdout, /^no nodes yet: edgegate node add --kind sshgate INSTANCE_ID\n$/)
      assert.match((await run('pair', 'list')).stdout, /^no pairs: /)

      const { tokens, admin } = await seed(database, [
        { id: 'edge-1', kind: 'sshgate' },
        { id: 'edge-2', kind: 'sshgate' },
      ])
      const gate = await startEdgegate(database, tls)
      try {
        const batch = { instance_id: 'edge-1', observations: [A, B, C].map((fp) => observation(fp)) }
        const posted = await call(tls, gate.base, '/v1/observations/batch?instance_id=edge-1', {
          body: batch,
          token: tokens['edge-1']!,
        })
        assert.equal(posted.status, 200, JSON.stringify(posted.body))
        assert.equal((await run('decision', 'approve', '--instance', 'edge-1', '--label', 'ci', A)).code, 0)
        const blocked = await call(tls, gate.base, `/api/decisions/edge-1/${B}`, {
          method: 'PUT',
          body: { status: 'blocked' },
          token: admin,
        })
        assert.equal(blocked.status, 200, JSON.stringify(blocked.body))
      } finally {
        await gate.stop()
      }

      const status = await run('status', '--json')
      assert.equal(status.code, 0, status.stderr)
      const s = JSON.parse(status.stdout)
      assert.equal(s.database.kind, dialect)
      assert.doesNotMatch(status.stdout, /password|:[^@/]*@/, 'no credentials in the report')
      assert.deepEqual(
        s.nodes.map((n: Json) => [n.instance_id, n.active, n.last_seen_at !== null]),
        [
          ['edge-1', true, true],
          ['edge-2', true, false],
        ],
      )
      assert.deepEqual(s.decisions, { approved: 1, blocked: 1, pending: 0 })
      assert.deepEqual(s.fingerprints, { observed: 3, waiting_for_decision: 1 })
      const human = await run('status')
      assert.match(human.stdout, /^nodes: 2 registered, 2 active, 1 seen in the last 24 hours$/m)
      assert.match(human.stdout, /^fingerprints: 3 observed, 1 waiting for a decision$/m)
      assert.match(human.stdout, /^INSTANCE +KIND +STATE +LAST SEEN$/m)
      assert.match(human.stdout, /^edge-2 +sshgate +active +never$/m)

      const decisions = async (...filters: string[]) => {
        const r = await run('decision', 'list', '--json', ...filters)
        assert.equal(r.code, 0, r.stderr)
        return JSON.parse(r.stdout).map((d: Json) => [d.fingerprint, d.status, d.source, d.actor.split(':')[0]])
      }
      assert.deepEqual(await decisions(), [
        [B, 'blocked', 'manual', 'admin'],
        [A, 'approved', 'manual', 'cli'],
      ])
      assert.deepEqual(await decisions('--status', 'approved'), [[A, 'approved', 'manual', 'cli']])
      assert.deepEqual(await decisions('--instance', 'edge-2'), [])
      assert.deepEqual(await decisions('--source', 'controller'), [])
      assert.equal(
        (await run('decision', 'list', '--source', 'controller', '--status', 'blocked')).stdout,
        'no decisions match --status blocked --source controller\n',
      )
      assert.equal((await decisions('--source', 'manual')).length, 2)
      assert.deepEqual(await decisions('--limit', '1'), [[B, 'blocked', 'manual', 'admin']])
      const nosuch = await run('decision', 'list', '--instance', 'nosuch')
      assert.deepEqual(
        [nosuch.code, nosuch.stderr],
        [1, 'edgegate: no node with instance_id nosuch (edgegate node list shows them)\n'],
      )
      const table = await run('decision', 'list', 'extra-argument-is-refused')
      assert.equal(table.code, 2)
      const bad = await run('decision', 'list', '--status', 'maybe')
      assert.deepEqual(
        [bad.code, bad.stderr],
        [2, 'edgegate: --status must be one of approved, blocked, pending, got "maybe"\n'],
      )
      assert.equal((await run('decision', 'list', '--limit', '0')).code, 2)
      const human2 = await run('decision', 'list', '--instance', 'edge-1')
      assert.match(human2.stdout, /^INSTANCE +FINGERPRINT +STATUS +SOURCE +ACTOR +UPDATED +EXPIRES +LABEL$/m)
      // The table's times are to the millisecond; the JSON keeps the decision clock's microseconds.
      assert.match(
        human2.stdout,
        new RegExp(`^edge-1 +${A} +approved +manual +cli:\\S+ +\\d{4}-\\d\\d-\\d\\dT[\\d:]{8}\\.\\d{3}Z +- +ci$`, 'm'),
      )
      const json2 = JSON.parse((await run('decision', 'list', '--instance', 'edge-1', '--json')).stdout)
      assert.match(json2[0].updated_at, /\.\d{6}Z$/)

      const fps = async (...filters: string[]) => {
        const r = await run('fingerprint', 'list', '--json', ...filters)
        assert.equal(r.code, 0, r.stderr)
        return JSON.parse(r.stdout)
          .map((f: Json) => [f.fingerprint, f.decision, f.count, f.ips])
          .sort((x: string[], y: string[]) => x[0]!.localeCompare(y[0]!))
      }
      assert.deepEqual(await fps(), [
        [A, 'approved', 1, ['192.0.2.10']],
        [B, 'blocked', 1, ['192.0.2.10']],
        [C, null, 1, ['192.0.2.10']],
      ])
      assert.deepEqual(await fps('--status', 'none'), [[C, null, 1, ['192.0.2.10']]])
      assert.deepEqual(await fps('--status', 'blocked'), [[B, 'blocked', 1, ['192.0.2.10']]])
      assert.deepEqual(await fps('--instance', 'edge-2'), [])
      assert.equal(
        (await run('fingerprint', 'list', '--instance', 'edge-2')).stdout,
        'no fingerprints match --instance edge-2\n',
      )
      const fpTable = await run('fingerprint', 'list', '--status', 'none')
      assert.equal(fpTable.code, 0)
      assert.match(fpTable.stdout, /^INSTANCE +FINGERPRINT +DECISION +COUNT +IPS +LAST SEEN +LABEL$/m)
      assert.match(fpTable.stdout, new RegExp(`^edge-1 +${C} +none +1 +192\\.0\\.2\\.10 +\\S+Z +-$`, 'm'))
    })

    test('decision enroll: approves what has no decision yet, leaves verdicts and local blocks alone; --dry-run, --since', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      const { tokens, admin } = await seed(database, [{ id: 'edge-1', kind: 'sshgate' }])
      const [D, E, F] = ['d'.repeat(32), 'e'.repeat(32), 'f'.repeat(32)]
      const old = new Date(Date.now() - 10 * 86_400_000).toISOString()
      const gate = await startEdgegate(database, tls)
      try {
        const posted = await call(tls, gate.base, '/v1/observations/batch?instance_id=edge-1', {
          body: {
            instance_id: 'edge-1',
            observations: [
              observation(A),
              observation(B),
              observation(C),
              // Seen last: the first of the undecided, but blocked on the gate.
              observation(D, { status: 'blocked', last_seen: new Date(Date.now() + 1000).toISOString() }),
              observation(F, { status: 'pending' }),
              observation(E, { first_seen: old, last_seen: old, sightings: [] }),
            ],
          },
          token: tokens['edge-1']!,
        })
        assert.equal(posted.status, 200, JSON.stringify(posted.body))
        const put = (fp: string, status: string) =>
          call(tls, gate.base, `/api/decisions/edge-1/${fp}`, { method: 'PUT', body: { status }, token: admin })
        assert.equal((await put(A, 'approved')).status, 200)
        assert.equal((await put(B, 'pending')).status, 200)
      } finally {
        await gate.stop()
      }
      const decided = async () => {
        const r = await run('decision', 'list', '--json')
        return Object.fromEntries((JSON.parse(r.stdout) as Json[]).map((d) => [d.fingerprint, [d.status, d.label]]))
      }
      const before = await decided()

      const dry = await run('decision', 'enroll', '--instance', 'edge-1', '--since', '168h', '--dry-run', '--json')
      assert.equal(dry.code, 0, dry.stderr)
      const plan = JSON.parse(dry.stdout)
      assert.deepEqual([plan.dry_run, plan.approved.map((f: Json) => f.fingerprint)], [true, [C]])
      assert.deepEqual(await decided(), before, 'a dry run changes nothing')
      const one = await run('decision', 'enroll', '--instance', 'edge-1', '--limit', '1', '--dry-run', '--json')
      assert.deepEqual(
        JSON.parse(one.stdout).approved.map((f: Json) => f.fingerprint),
        [C],
        '--limit counts the ones it would approve, not those it leaves alone',
      )

      const enrolled = await run('decision', 'enroll', '--instance', 'edge-1', '--since', '168h')
      assert.equal(enrolled.code, 0, enrolled.stderr)
      assert.match(enrolled.stdout, new RegExp(`^${C}  last seen \\S+Z\n1 fingerprint\\(s\\) of edge-1 approved\n$`))
      const after = await decided()
      assert.deepEqual(after[C], ['approved', 'enrolled'])
      assert.deepEqual(
        [after[A], after[B], after[D], after[E], after[F]],
        [before[A], before[B], undefined, undefined, undefined],
      )

      const rest = await run('decision', 'enroll', '--instance', 'edge-1', '--label', 'late', '--json')
      assert.deepEqual(
        JSON.parse(rest.stdout).approved.map((f: Json) => f.fingerprint),
        [E],
        'without --since the old one too; those blocked or made pending on the gate never',
      )
      assert.deepEqual((await decided())[E], ['approved', 'late'])
      const audited = await run('audit', 'list', '--action', 'decision.approved', '--json')
      assert.deepEqual(
        (JSON.parse(audited.stdout) as Json[]).map((e) => e.target).sort(),
        [`edge-1/${A}`, `edge-1/${C}`, `edge-1/${E}`].sort(),
      )

      const nobody = await run('decision', 'enroll', '--instance', 'nope')
      assert.deepEqual([nobody.code, nobody.stderr], [1, 'edgegate: no node with instance_id nope\n'])
      assert.equal((await run('decision', 'enroll', '--instance', 'edge-1', '--limit', '0')).code, 2)
      assert.equal((await run('decision', 'enroll', '--instance', 'edge-1', '--label', 'a\u001b[31mb')).code, 2)
    })

    test('audit list and GET /api/audit: who changed what and when, with filters', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      const { tokens, admin } = await seed(database, [
        { id: 'edge-1', kind: 'sshgate' },
        { id: 'edge-2', kind: 'sshgate' },
      ])
      const gate = await startEdgegate(database, tls)
      try {
        assert.equal((await run('decision', 'approve', '--instance', 'edge-1', A)).code, 0)
        const blocked = await call(tls, gate.base, `/api/decisions/edge-1/${B}`, {
          method: 'PUT',
          body: { status: 'blocked' },
          token: admin,
        })
        assert.equal(blocked.status, 200, JSON.stringify(blocked.body))
        assert.equal((await run('node', 'disable', 'edge-2')).code, 0)

        const entries = async (...filters: string[]) => {
          const r = await run('audit', 'list', '--json', ...filters)
          assert.equal(r.code, 0, r.stderr)
          return (JSON.parse(r.stdout) as Json[]).map((e) => [e.action, e.actor.split(':')[0], e.target])
        }
        const all = await entries()
        assert.deepEqual(all.slice(0, 3), [
          ['node.disable', 'cli', 'edge-2'],
          ['decision.blocked', 'admin', `edge-1/${B}`],
          ['decision.approved', 'cli', `edge-1/${A}`],
        ])
        assert.deepEqual(
          all.slice(3).map((e) => e[0]),
          ['node.add', 'node.add'],
        )
        assert.deepEqual(await entries('--action', 'decision'), all.slice(1, 3), 'a family')
        assert.deepEqual(await entries('--action', 'decision.blocked'), [all[1]])
        assert.deepEqual(await entries('--action', 'decision.b'), [], 'a family is whole words')
        assert.equal(
          (await run('audit', 'list', '--action', 'decision.b')).stdout,
          'no audit entries match --action decision.b\n',
        )
        assert.deepEqual(await entries('--target', `edge-1/${A}`), [all[2]])
        assert.deepEqual(await entries('--actor', 'test'), all.slice(3))
        assert.deepEqual(await entries('--since', '1h', '--limit', '2'), all.slice(0, 2))
        assert.deepEqual(await entries('--since', new Date(Date.now() + 60_000).toISOString()), [])
        const table = await run('audit', 'list', '--action', 'node.disable')
        assert.match(table.stdout, /^AT +ACTOR +ACTION +TARGET\n\S+Z +cli:\S+ +node\.disable +edge-2\n$/)
        const bad = await run('audit', 'list', '--since', 'yesterday')
        assert.deepEqual(
          [bad.code, bad.stderr],
          [2, 'edgegate: --since must be an RFC 3339 time or a duration such as 24h, got "yesterday"\n'],
        )

        const api = await call(tls, gate.base, '/api/audit?action=node&limit=10', { token: admin })
        assert.equal(api.status, 200, JSON.stringify(api.body))
        assert.deepEqual(
          api.body.entries.map((e: Json) => e.action),
          ['node.disable', 'node.add', 'node.add'],
        )
        assert.match(api.body.entries[0].at, /Z$/)
        assert.equal((await call(tls, gate.base, '/api/audit', { token: tokens['edge-1']! })).status, 403)
        assert.equal((await call(tls, gate.base, '/api/audit')).status, 401)
        const badSince = await call(tls, gate.base, '/api/audit?since=soon', { token: admin })
        assert.equal(badSince.status, 400)
      } finally {
        await gate.stop()
      }
    })

    test('audit retention: entries past --audit-retention go at the sweep, 0 keeps them, under 24h is refused', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      await seed(database, [{ id: 'edge-1', kind: 'sshgate' }])
      const d = await openEdgeDatabase(database, 2)
      const day = 86_400_000
      try {
        await audit(d.db, 'cli:old', 'node.add', 'gone', Date.now() - 3 * day)
        await audit(d.db, 'cli:recent', 'node.add', 'kept', Date.now() - day)
      } finally {
        await d.close()
      }
      const targets = async () => {
        const r = await run('audit', 'list', '--json')
        assert.equal(r.code, 0, r.stderr)
        return (JSON.parse(r.stdout) as Json[]).map((e) => e.target).sort()
      }
      const forever = await startEdgegate(database, tls, ['--audit-retention', '0', '--retention-interval', '1s'])
      await new Promise((resolve) => setTimeout(resolve, 1500))
      await forever.stop()
      assert.deepEqual(await targets(), ['edge-1', 'gone', 'kept'], '0 keeps every entry')

      const gate = await startEdgegate(database, tls, ['--audit-retention', '48h', '--retention-interval', '1s'])
      try {
        await waitFor('the old entry swept', async () => !(await targets()).includes('gone'))
        assert.deepEqual(await targets(), ['edge-1', 'kept'])
      } finally {
        await gate.stop()
      }
      const short = await run(
        'serve',
        '--tls-cert',
        tls.server.certPath,
        '--tls-key',
        tls.server.keyPath,
        '--audit-retention',
        '1h',
      )
      assert.equal(short.code, 1)
      assert.match(short.stderr, /audit_retention: at least 24h, or 0 to keep every entry/)
    })
  })
}

describe('edgegate admin commands and the config file', () => {
  test('EDGEGATE_CONFIG or --config names the server config file; its other keys are not the CLI’s business', async () => {
    const dir = tempDir('edgegate-config-')
    const database = `sqlite:${join(dir.path, 'e.db')}`
    const file = join(dir.path, 'edgegate.json')
    writeFileSync(
      file,
      JSON.stringify({ listen: '127.0.0.1:8443', database, tls_cert: '/etc/x.pem', tls_key: '/etc/x.key' }),
    )
    assert.equal((await cli(['migrate', '--config', file])).code, 0)
    const viaEnv = await cli(['node', 'list', '--json'], { EDGEGATE_CONFIG: file, EDGEGATE_DATABASE: undefined })
    assert.deepEqual([viaEnv.code, viaEnv.stdout], [0, '[]\n'], viaEnv.stderr)
    const viaFlag = await cli(['--config', file, 'status', '--json'], { EDGEGATE_DATABASE: undefined })
    assert.equal(viaFlag.code, 0, viaFlag.stderr)
    assert.equal(JSON.parse(viaFlag.stdout).database.location, join(dir.path, 'e.db'))
    const missing = await cli(['node', 'list', '--config', join(dir.path, 'nope.json')])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /nope\.json/)
    const closed = await freePort()
    const down = await cli(['status', '--database', `postgres://u:secret@127.0.0.1:${closed}/x`])
    assert.equal(down.code, 1)
    assert.equal(down.stderr.trim().split('\n').length, 1, down.stderr)
    assert.match(down.stderr, /unreachable/)
    assert.doesNotMatch(down.stderr, /secret/)
  })

  test('--help and the SQLite admin commands never load the server stack (Fastify, undici, pg)', async () => {
    const dir = tempDir('edgegate-lazy-')
    const database = `sqlite:${join(dir.path, 'e.db')}`
    assert.equal((await cli(['migrate', '--database', database])).code, 0)
    for (const args of [
      ['--help'],
      ['node', 'list', '--database', database],
      ['status', '--database', database],
      ['decision', 'list', '--database', database],
      ['enforcement', 'status', '--database', database],
      ['enforcement', 'disable', '--database', database],
      ['pair', 'list', '--database', database],
    ]) {
      const r = await loadedPackages([MAIN, ...args])
      assert.equal(r.code, 0, r.stderr)
      for (const heavy of ['fastify', 'undici', 'pg', 'pino', 'typebox'])
        assert.ok(!r.packages.includes(heavy), `${args.join(' ')} loaded ${heavy}: ${r.packages.join(', ')}`)
    }
  })
})
