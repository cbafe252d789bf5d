/**
 * The notify command line as operators run it (child processes): the spec's single-dash form
 * still serves, `notify token create|list|revoke` on the database a running server uses (both
 * backends), `--config` and $NOTIFY_CONFIG, a missing database refused, exit codes 0/1/2, and
 * `--help` and the token commands never loading the server stack.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { loadedPackages, tempDir } from '@gatehouse/testkit'
import { cli, MAIN, oneLine } from './cli-run.ts'
import { ADMIN, ADMIN_PASSWORD, backends, type Notify, reader, startNotify } from './helpers.ts'
import { SseClient } from './sse.ts'

const dir = tempDir('notify-cli-')
after(() => dir.remove())

describe('notify command line', () => {
  test('--help, -help, serve --help and --version; usage errors exit 2 with one line', async () => {
    for (const args of [['--help'], ['-help']]) {
      const r = await cli(args)
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /serve \[options\]/)
      assert.match(r.stdout, /token/)
      assert.match(r.stdout, /Examples:/)
    }
    const serve = await cli(['serve', '--help'])
    for (const name of ['--listen', '--hook-id', 'NOTIFY_HOOK_TOKEN', 'NOTIFY_PUBLIC_URL', 'NOTIFY_READER_PASSWORD']) {
      assert.ok(serve.stdout.includes(name), name)
    }
    const create = await cli(['token', 'create', '--help'])
    assert.match(create.stdout, /--user <name>/)
    assert.match(create.stdout, /\$ notify token create --user alice/)
    for (const args of [['-version'], ['--version'], ['-V']]) {
      assert.match((await cli(args)).stdout, /^\d+\.\d+\.\d+\n$/)
    }
    for (const args of [['token', 'create', '--name', 'x'], ['token', 'revoke'], ['-no-such-flag', 'x'], ['tokn']]) {
      const r = await cli(args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      oneLine(r)
    }
  })

  test('an admin command refuses a database that does not exist; migrate creates it', async () => {
    const database = `sqlite:${join(dir.path, 'fresh.db')}`
    const missing = await cli(['token', 'list', '--database', database])
    assert.equal(missing.code, 1)
    oneLine(missing)
    assert.match(missing.stderr, /fresh\.db does not exist; .*notify migrate/)
    const migrated = await cli(['migrate', '-database', database])
    assert.deepEqual([migrated.code, migrated.stdout], [0, 'database (sqlite) is up to date\n'], migrated.stderr)
    // Each empty list says so, with the command that makes the first entry; its JSON is [].
    const lists: [string[], string][] = [
      [['token', 'list'], 'no tokens yet: notify token create --user USER --name NAME\n'],
      [['user', 'list'], 'no users yet: notify user create NAME --admin --password-file FILE\n'],
      [['channel', 'list'], 'no channels yet: notify channel create NAME\n'],
      [['hook', 'list'], 'no hooks yet: notify hook create --channel CHANNEL\n'],
      [['target', 'list'], 'no action targets yet: notify target set NAME --url URL\n'],
      [['push', 'list'], 'no push subscriptions: a reader turns push on in the web app (Push notifications)\n'],
      [['audit', 'list'], 'the audit log is empty\n'],
      [['audit', 'list', '--before', '5'], 'no audit entries older than id 5\n'],
    ]
    for (const [args, text] of lists) {
      const empty = await cli([...args, '--database', database])
      assert.deepEqual([empty.code, empty.stdout], [0, text], empty.stderr)
      const json = await cli([...args, '--json', '--database', database])
      assert.deepEqual([json.code, json.stdout], [0, '[]\n'], `${args.join(' ')} --json: ${json.stderr}`)
    }
    const nobody = await cli(['token', 'list', '--user', 'nobody', '--database', database])
    assert.deepEqual([nobody.code, nobody.stderr], [1, 'notify: no user "nobody"\n'])
  })

  test('--help and the token commands never load the server stack (Fastify, undici, pg, TypeBox)', async () => {
    const database = `sqlite:${join(dir.path, 'light.db')}`
    assert.equal((await cli(['migrate', '--database', database])).code, 0)
    for (const args of [['--help'], ['serve', '--help'], ['token', 'list', '--database', database]]) {
      const r = await loadedPackages([MAIN, ...args], { PATH: process.env.PATH ?? '' })
      assert.equal(r.code, 0, r.stderr)
      for (const heavy of ['fastify', 'undici', 'pg', 'pino', 'typebox']) {
        assert.ok(!r.packages.includes(heavy), `${args.join(' ')} loaded ${heavy}: ${r.packages.join(', ')}`)
      }
    }
  })

  for (const backend of backends) {
    describe(`tokens on the database a running server uses (${backend.name})`, () => {
      let n: Notify
      let cookie: string
      before(async () => {
        n = await startNotify(backend)
        cookie = await n.client.login(ADMIN, ADMIN_PASSWORD)
      })
      after(() => n.close())
      const me = (secret: string) => n.client.get('/api/v1/auth/me', { headers: { authorization: `Bearer ${secret}` } })

      test('create prints the secret once; it reads as that reader; list shows it without the secret; revoke stops it', async () => {
        await reader(n, cookie, 'alice')
        const db = ['--database', n.config.database]
        const created = await cli(['token', 'create', '--user', 'alice', '--name', 'backup script', '--json', ...db])
        assert.equal(created.code, 0, created.stderr)
        const token = JSON.parse(created.stdout) as { id: string; user: string; name: string; secret: string }
        assert.deepEqual([token.user, token.name], ['alice', 'backup script'])
        assert.match(token.secret, /^ntr_[A-Za-z0-9_-]{43}$/)
        const res = await me(token.secret)
        assert.equal(res.status, 200)
        assert.equal(res.body.user.username, 'alice')

        // The spec's single-dash flags work for every command, before or after the others.
        const text = await cli([
          'token',
          'create',
          '-user',
          'alice',
          '-name',
          'second',
          ...db.map((a) => a.replace(/^--/, '-')),
        ])
        assert.equal(text.code, 0, text.stderr)
        assert.match(text.stdout, /^token [0-9a-f-]{36} created for alice: ntr_[A-Za-z0-9_-]{43}\nStore it now/)

        const json = await cli(['token', 'list', '--user', 'alice', '--json', ...db])
        assert.equal(json.code, 0, json.stderr)
        assert.ok(!json.stdout.includes('ntr_'), 'a list never shows secrets')
        const rows = JSON.parse(json.stdout) as {
          id: string
          name: string
          user: string
          last_used_at: string | null
        }[]
        assert.deepEqual(
          rows.map((r) => [r.name, r.user]),
          [
            ['backup script', 'alice'],
            ['second', 'alice'],
          ],
        )
        assert.ok(rows[0]!.last_used_at, 'its use by the server is visible')
        const table = await cli(['token', 'list', ...db])
        assert.match(table.stdout, /^ID +USER +NAME +CREATED +LAST USED +EXPIRES\n/)
        assert.match(table.stdout, /alice +backup script/)
        assert.match(table.stdout, /second .* never +never\n/)

        // A running server ends the stream a script opened with the token the command revokes.
        const stream = await SseClient.openWithToken(n.base, token.secret)
        try {
          await stream.nextOf('ready')
          const revoked = await cli(['token', 'revoke', token.id, ...db])
          assert.deepEqual([revoked.code, revoked.stdout], [0, `token ${token.id} revoked: it no longer works\n`])
          assert.equal(await stream.ended(), true)
        } finally {
          stream.close()
        }
        assert.equal((await me(token.secret)).status, 401)
        const again = await cli(['token', 'revoke', token.id, ...db])
        assert.equal(again.code, 1)
        oneLine(again)
        assert.match(again.stderr, /no reader token/)

        // Issuing and revoking a credential for someone is in the audit log, never the secret.
        const audit = await cli(['audit', 'list', '--limit', '3', '--json', ...db])
        assert.equal(audit.code, 0, audit.stderr)
        assert.ok(!audit.stdout.includes('ntr_'))
        const entries = JSON.parse(audit.stdout) as { actor: string; action: string; target: string; details: object }[]
        assert.deepEqual(
          entries.map((e) => [e.action, e.target, e.details]),
          [
            ['reader_token.revoke', 'alice', { id: token.id, name: 'backup script' }],
            ['reader_token.create', 'alice', { id: rows[1]!.id, name: 'second' }],
            ['reader_token.create', 'alice', { id: token.id, name: 'backup script' }],
          ],
        )
        for (const e of entries) assert.match(e.actor, /^cli:/)
      })

      test('a token for a while: --expires-in or --expires-at; past its time it is refused and listed as expired', async () => {
        await reader(n, cookie, 'fay')
        const db = ['--database', n.config.database]
        const before = Date.now()
        const created = await cli([
          'token',
          'create',
          '--user',
          'fay',
          '--name',
          'laptop',
          '--expires-in',
          '1h',
          '--json',
          ...db,
        ])
        assert.equal(created.code, 0, created.stderr)
        const token = JSON.parse(created.stdout) as { id: string; expires_at: string; secret: string }
        const at = Date.parse(token.expires_at)
        assert.ok(at >= before + 3_600_000 - 1000 && at <= Date.now() + 3_600_000, token.expires_at)
        assert.equal((await me(token.secret)).status, 200)
        const text = await cli([
          'token',
          'create',
          '--user',
          'fay',
          '--name',
          'ci',
          '--expires-at',
          '2099-01-01T00:00:00+02:00',
          ...db,
        ])
        assert.equal(text.code, 0, text.stderr)
        assert.match(text.stdout, /^token \S+ created for fay \(until 2098-12-31T22:00:00\.000Z\): ntr_/)

        // Time passes: the stored expiry moves into the past.
        const past = new Date(Date.now() - 1000).toISOString()
        await n.database.db.updateTable('reader_tokens').set({ expires_at: past }).where('id', '=', token.id).execute()
        assert.equal((await me(token.secret)).status, 401)
        const list = await cli(['token', 'list', '--user', 'fay', ...db])
        assert.match(
          list.stdout,
          new RegExp(`^${token.id} +fay +laptop .* ${past.replace(/\./g, '\\.')} \\(expired\\)$`, 'm'),
        )
        assert.match(list.stdout, /fay +ci .* 2098-12-31T22:00:00\.000Z$/m)

        const count = async () => (await n.database.db.selectFrom('reader_tokens').select('id').execute()).length
        const tokens = await count()
        for (const [args, message] of [
          [['--expires-in', '30d'], /^notify: --expires-in: invalid duration "30d"/],
          [['--expires-at', '2020-01-01T00:00:00Z'], /^notify: --expires-at 2020-01-01T00:00:00Z is in the past\n$/],
          [['--expires-in', '1h', '--expires-at', '2099-01-01T00:00:00Z'], /not both/],
        ] as const) {
          const r = await cli(['token', 'create', '--user', 'fay', '--name', 'x', ...args, ...db])
          assert.deepEqual([r.code, r.stdout], [2, ''], args.join(' '))
          assert.match(r.stderr, message)
        }
        assert.equal(await count(), tokens, 'a refused expiry creates nothing')
      })

      test('user list shows the readers without secrets; --json for scripts', async () => {
        const db = ['--database', n.config.database]
        // Created, not signed in (the reader helper would sign her in).
        const created = await n.client.post('/api/v1/users', {
          cookie,
          body: { username: 'carol', password: 'carol-password-123' },
        })
        assert.equal(created.status, 201, created.text)
        const table = await cli(['user', 'list', ...db])
        assert.equal(table.code, 0, table.stderr)
        assert.match(table.stdout, /^USER +KIND +SIGN-IN +ROLE +STATE +CREATED +LAST SIGN-IN\n/)
        // The administrator signed in (the suite's cookie); carol never has.
        assert.match(table.stdout, new RegExp(`^${ADMIN} +human +local +administrator +enabled +\\S+ +\\d{4}-`, 'm'))
        assert.match(table.stdout, /^carol +human +local +reader +enabled +\S+ +never$/m)
        const json = await cli(['user', 'list', '--json', ...db])
        type Listed = { username: string; admin: boolean; last_sign_in_at: string | null }
        const users = JSON.parse(json.stdout) as Listed[]
        assert.deepEqual(
          users.filter((u) => u.username === ADMIN || u.username === 'carol').map((u) => [u.username, u.admin]),
          [
            [ADMIN, true],
            ['carol', false],
          ],
        )
        const signedIn = (name: string) => users.find((u) => u.username === name)?.last_sign_in_at
        assert.equal(signedIn('carol'), null)
        const before = signedIn(ADMIN)
        assert.ok(before && Date.parse(before) <= Date.now())
        await n.client.login('carol', 'carol-password-123')
        const after = JSON.parse((await cli(['user', 'list', '--json', ...db])).stdout) as Listed[]
        assert.ok(after.find((u) => u.username === 'carol')?.last_sign_in_at, 'set by her first sign-in')
        assert.equal(after.find((u) => u.username === ADMIN)?.last_sign_in_at, before, "others' stay")
        assert.doesNotMatch(json.stdout, /password|\$2[aby]\$/)
      })

      test('an unknown or disabled user and a bad name are refused with one line, exit 1', async () => {
        const db = ['--database', n.config.database]
        const tokens = async () =>
          Number(
            (await n.database.db
              .selectFrom('reader_tokens')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirst())!.n,
          )
        const before = await tokens()
        const nobody = await cli(['token', 'create', '--user', 'nobody', '--name', 'x', ...db])
        assert.equal(nobody.code, 1)
        oneLine(nobody)
        assert.match(nobody.stderr, /no user "nobody"/)
        await reader(n, cookie, 'dave')
        await n.database.db.updateTable('users').set({ enabled: 0 }).where('username', '=', 'dave').execute()
        const disabled = await cli(['token', 'create', '--user', 'dave', '--name', 'x', ...db])
        assert.equal(disabled.code, 1)
        assert.match(disabled.stderr, /user "dave" is disabled/)
        const blank = await cli(['token', 'create', '--user', 'alice', '--name', ' ', ...db])
        assert.equal(blank.code, 1)
        assert.match(blank.stderr, /--name must be 1 to 100 characters/)
        assert.equal(await tokens(), before, 'a refused command writes nothing')
      })

      test('the database comes from --config or $NOTIFY_CONFIG when no flag names it', async () => {
        const file = join(dir.path, `config-${backend.name}.json`)
        // A server's whole config file: the admin command takes its database and ignores the rest.
        writeFileSync(
          file,
          JSON.stringify({ database: n.config.database, listen: '127.0.0.1:8080', hookChannel: 'ops' }),
        )
        const viaFlag = await cli(['--config', file, 'token', 'list', '--json'])
        assert.equal(viaFlag.code, 0, viaFlag.stderr)
        assert.ok(Array.isArray(JSON.parse(viaFlag.stdout)))
        const viaEnv = await cli(['token', 'list', '--json'], { NOTIFY_CONFIG: file })
        assert.equal(viaEnv.code, 0, viaEnv.stderr)
        assert.deepEqual(JSON.parse(viaEnv.stdout), JSON.parse(viaFlag.stdout))
        const gone = await cli(['token', 'list', '--config', join(dir.path, 'nope.json')])
        assert.equal(gone.code, 1)
        assert.match(gone.stderr, /nope\.json/)
      })
    })
  }
})
