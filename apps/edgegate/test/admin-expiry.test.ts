/**
 * Administrator tokens that expire (`admin add|rotate-token --expires-in|--expires-at`), on
 * SQLite and PostgreSQL: refused with a reason once past, dashboard sessions capped at the
 * token's expiry, shown in `admin list`, and bad times refused before anything is written.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { insertAdmin, listAdmins } from '../src/admins/store.ts'
import { noteAdminUse } from '../src/auth/principal.ts'
import { openEdgeDatabase } from '../src/db/open.ts'
import { call, cli, DIALECTS, type Json, lazyPostgres, makeTls, newDatabase, startEdgegate } from './helpers.ts'

const tls = makeTls()
const pg = lazyPostgres()
after(async () => {
  await pg.stop()
  tls.ca.remove()
})

const HOUR = 3_600_000
const tokenOf = (stdout: string) => /token: (\S+)/.exec(stdout)?.[1] ?? ''
const untilOf = (stdout: string) => Date.parse(/it works until (\S+)\)/.exec(stdout)?.[1] ?? '')

for (const dialect of DIALECTS) {
  describe(`administrator token expiry (${dialect})`, () => {
    test('an expiring token works until its time, then is refused with the reason; sessions never outlive it', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      assert.equal((await run('migrate')).code, 0)

      // Bad times are usage errors that write nothing.
      for (const [args, why] of [
        [['--expires-in', '30s'], /--expires-in must be at least 1m/],
        [['--expires-in', 'soon'], /--expires-in: /],
        [['--expires-at', '2020-01-01T00:00:00Z'], /--expires-at 2020-01-01T00:00:00Z is in the past/],
        [['--expires-at', 'tomorrow'], /--expires-at must be an RFC 3339 time/],
        [['--expires-in', '1h', '--expires-at', '2099-01-01T00:00:00Z'], /not both/],
      ] as const) {
        const r = await run('admin', 'add', 'carol', ...args)
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
        assert.match(r.stderr, why)
        assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      }
      assert.deepEqual(JSON.parse((await run('admin', 'list', '--json')).stdout), [], 'nobody was added')
      assert.equal((await run('admin', 'list')).stdout, 'no administrators yet: edgegate admin add NAME\n')

      const before = Date.now()
      const added = await run('admin', 'add', 'carol', '--expires-in', '2h')
      assert.equal(added.code, 0, added.stderr)
      const carol = tokenOf(added.stdout)
      const until = untilOf(added.stdout)
      assert.ok(until >= before + 2 * HOUR - 1000 && until <= Date.now() + 2 * HOUR, added.stdout)
      const daveAdded = await run('admin', 'add', 'dave')
      assert.equal(daveAdded.code, 0, daveAdded.stderr)

      const listed = JSON.parse((await run('admin', 'list', '--json')).stdout) as Json[]
      assert.deepEqual(
        listed.map((a) => [a.name, a.expires_at === null ? null : Date.parse(a.expires_at), a.expired]),
        [
          ['carol', until, false],
          ['dave', null, false],
        ],
      )
      const table = (await run('admin', 'list')).stdout
      assert.match(table, /^NAME +CREATED +LAST USED +EXPIRES$/m)
      assert.match(table, /^dave +\S+ +never +never$/m)
      // status names a token that stops working within a fortnight.
      assert.match(
        (await run('status')).stdout,
        /^administrators: 2, carol's token expires \d{4}-\S+ \(edgegate admin rotate-token NAME\)$/m,
      )
      const expiring = JSON.parse((await run('status', '--json')).stdout).administrators
      assert.deepEqual(expiring, {
        count: 2,
        expiring_tokens: [{ name: 'carol', expires_at: new Date(until).toISOString(), expired: false }],
      })

      const gate = await startEdgegate(database, tls)
      try {
        assert.equal((await call(tls, gate.base, '/api/nodes', { token: carol })).status, 200)
        const signIn = await call(tls, gate.base, '/api/session', { body: { token: carol } })
        assert.equal(signIn.status, 200)
        const maxAge = Number(/Max-Age=(\d+)/.exec(String(signIn.headers['set-cookie']))?.[1])
        assert.ok(maxAge > 2 * 3600 - 60 && maxAge <= 2 * 3600, `the cookie ends with the token: Max-Age=${maxAge}`)
        // The session and the token each say when the token expires; the dashboard shows it.
        const cookie = String(signIn.headers['set-cookie']).split(';')[0]!
        const bySession = await call(tls, gate.base, '/api/session', { headers: { cookie } })
        assert.deepEqual(bySession.body, { admin: 'carol', token_expires_at: new Date(until).toISOString() })
        const byToken = await call(tls, gate.base, '/api/session', { token: carol })
        assert.deepEqual(byToken.body, bySession.body)
        const dave = await call(tls, gate.base, '/api/session', { token: tokenOf(daveAdded.stdout) })
        assert.deepEqual(dave.body, { admin: 'dave', token_expires_at: null })
        const page = await call(tls, gate.base, '/', { headers: { cookie } })
        assert.match(
          String(page.body),
          /id="token-notice"[\s\S]*less than a day left\), and this session with it[\s\S]*rotate-token carol/,
        )
        const byBearer = await call(tls, gate.base, '/', { token: carol })
        assert.match(String(byBearer.body), /less than a day left\)\. An operator/, 'no session to speak of')
        const d = await openEdgeDatabase(database, 1)
        try {
          const session = await d.db.selectFrom('sessions').select('expires_ms').executeTakeFirstOrThrow()
          assert.equal(Number(session.expires_ms), until, 'the stored session ends when the token does')
          // The token's time comes: move it into the past, as the clock would.
          await d.db
            .updateTable('admins')
            .set({ expires_ms: Date.now() - 1000 })
            .where('name', '=', 'carol')
            .execute()
        } finally {
          await d.close()
        }

        const refused = await call(tls, gate.base, '/api/nodes', { token: carol })
        assert.equal(refused.status, 401)
        assert.match(
          JSON.stringify(refused.body),
          /administrator token of carol expired at \d{4}-.*edgegate admin rotate-token/,
        )
        const noSignIn = await call(tls, gate.base, '/api/session', { body: { token: carol } })
        assert.equal(noSignIn.status, 401)
        assert.match(JSON.stringify(noSignIn.body), /expired at/)
        assert.match((await run('admin', 'list')).stdout, /^carol +.* \(expired\)$/m)
        assert.match((await run('status')).stdout, /^administrators: 2, carol's token expired \d{4}-/m)

        // A new token, without an expiry this time, then with the shortest one.
        const rotated = await run('admin', 'rotate-token', 'carol')
        assert.equal(rotated.code, 0, rotated.stderr)
        assert.doesNotMatch(rotated.stdout, /works until/)
        assert.equal((await call(tls, gate.base, '/api/nodes', { token: tokenOf(rotated.stdout) })).status, 200)
        assert.match((await run('admin', 'list')).stdout, /^carol +\S+ +\S+ +never$/m)
        assert.match((await run('status')).stdout, /^administrators: 2$/m, 'nothing to warn about')
        const badRotate = await run('admin', 'rotate-token', 'carol', '--expires-in', '1s')
        assert.equal(badRotate.code, 2, badRotate.stderr)
        assert.equal(
          (await call(tls, gate.base, '/api/nodes', { token: tokenOf(rotated.stdout) })).status,
          200,
          'a refused rotation leaves the token as it was',
        )
        const short = await run('admin', 'rotate-token', 'carol', '--expires-in', '1m')
        assert.equal(short.code, 0, short.stderr)
        assert.ok(untilOf(short.stdout) > Date.now(), short.stdout)
        assert.equal((await call(tls, gate.base, '/api/nodes', { token: tokenOf(short.stdout) })).status, 200)
      } finally {
        await gate.stop()
      }
      const audit = JSON.parse((await run('audit', 'list', '--target', 'carol', '--json')).stdout) as Json[]
      assert.deepEqual(
        audit.map((e) => e.action),
        ['admin.rotate_token', 'admin.rotate_token', 'admin.add'],
      )
    })
  })
}

test('a last-use write the database refuses is not tried again within the minute (SQLite: the refusal is a trigger)', async () => {
  const database = await newDatabase('sqlite', pg.get)
  const d = await openEdgeDatabase(database, 1)
  try {
    await insertAdmin(d.db, 'erin', 'hash-e', Date.now(), null)
    let attempts = 0
    d.sqlite!.function('note_attempt', () => ++attempts)
    // What a database turned read-only does to the write: refuse it.
    d.sqlite!.exec(
      `create trigger refuse_use before update of last_used_ms on admins begin select note_attempt(); select raise(abort, 'read-only'); end`,
    )
    const admin = (await listAdmins(d.db))[0]!
    for (let i = 0; i < 3; i++) await noteAdminUse(d.db, admin)
    assert.equal(attempts, 1, 'one attempt, then none until the minute has passed')
    assert.equal((await listAdmins(d.db))[0]!.last_used_ms, null)
  } finally {
    await d.close()
  }
})
