/**
 * The admin commands beyond tokens (child processes, on the database a running server uses,
 * both backends): the user panel (`notify user create|promote|demote|enable|disable|
 * revoke-sessions|reset-password`) with the same refusals as the web panel, action targets
 * (`notify target list|set|delete`) with the action key rules, the audit log (`notify audit
 * list`) recording every command-line change as `cli:<login>`, and Web Push (`notify push
 * keys|list`) never printing a secret. None of them loads the server stack.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { loadedPackages, tempDir } from '@gatehouse/testkit'
import { saveSubscription } from '../src/push/store.ts'
import { cli, MAIN, oneLine } from './cli-run.ts'
import { ADMIN, ADMIN_PASSWORD, backends, type Notify, reader, startNotify } from './helpers.ts'

const dir = tempDir('notify-cli-admin-')
after(() => dir.remove())
const ACTION_KEY = Buffer.alloc(32, 7).toString('base64')

interface Audit {
  id: number
  actor: string
  action: string
  target: string
  details: Record<string, unknown>
}

for (const backend of backends) {
  describe(`admin commands on a running server's database (${backend.name})`, () => {
    let n: Notify
    let cookie: string
    let db: string[]
    const env = { NOTIFY_BCRYPT_COST: '4' }
    before(async () => {
      n = await startNotify(backend)
      cookie = await n.client.login(ADMIN, ADMIN_PASSWORD)
      db = ['--database', n.config.database]
    })
    after(() => n.close())
    const audit = async (): Promise<Audit[]> => {
      const r = await cli(['audit', 'list', '--json', ...db])
      assert.equal(r.code, 0, r.stderr)
      return JSON.parse(r.stdout) as Audit[]
    }
    const passwordFile = (name: string, text: string) => {
      const file = join(dir.path, `${backend.name}-${name}`)
      writeFileSync(file, `${text}\n`, { mode: 0o600 })
      return file
    }

    test('user create: a person from a password file or standard input, a system identity; audited as cli', async () => {
      const file = passwordFile('erin', 'erin-password-123')
      const created = await cli(['user', 'create', 'erin', '--password-file', file, ...db], env)
      assert.deepEqual([created.code, created.stdout], [0, 'created reader erin\n'], created.stderr)
      await n.client.login('erin', 'erin-password-123')
      const admin = await cli(
        ['user', 'create', 'frank', '--admin', '--password-file', '-', '--json', ...db],
        env,
        'frank-password-123\n',
      )
      assert.equal(admin.code, 0, admin.stderr)
      assert.deepEqual(
        (({ username, admin, kind, enabled }) => ({ username, admin, kind, enabled }))(JSON.parse(admin.stdout)),
        { username: 'frank', admin: true, kind: 'human', enabled: true },
      )
      assert.doesNotMatch(admin.stdout, /password|\$2[aby]\$/)
      const system = await cli(['user', 'create', 'ci-bot', '--system', ...db], env)
      assert.equal(system.code, 0, system.stderr)
      const entries = await audit()
      const mine = entries
        .filter((e) => e.action === 'user.create')
        .map((e) => [e.target, e.details.admin, e.details.kind])
      assert.deepEqual(mine.slice(0, 3), [
        ['ci-bot', false, 'system'],
        ['frank', true, 'human'],
        ['erin', false, 'human'],
      ])
      assert.ok(entries.every((e) => e.action !== 'user.create' || e.actor.startsWith('cli:') || e.actor === ADMIN))
      assert.match(entries[0]!.actor, /^cli:/)
    })

    test('user create refuses a bad name, a short password, a taken name and a missing password, writing nothing', async () => {
      const count = async () => (await n.database.db.selectFrom('users').select('id').execute()).length
      const before = await count()
      // Exit 2 for a command written wrong (usage), 1 for one that failed.
      const cases: Array<[string[], RegExp, number, string?]> = [
        [['user', 'create', 'Bad Name', '--system'], /is not a user name/, 2],
        [['user', 'create', 'gina', '--password-file', '-'], /12 to 1024 characters/, 1, 'short\n'],
        [['user', 'create', 'gina', '--password-file', '-'], /holds no password/, 1, '\n'],
        [
          ['user', 'create', 'gina', '--password-file', join(dir.path, 'missing')],
          /cannot read the password .*ENOENT/,
          1,
        ],
        [['user', 'create', 'gina'], /needs --password-file/, 2],
        [['user', 'create', 'gina', '--system', '--password-file', '-'], /system reader has no password/, 2, 'x\n'],
        [['user', 'create', ADMIN, '--system'], /user_exists|already exists|exists/, 1],
      ]
      for (const [args, message, code, input] of cases) {
        const r = await cli([...args, ...db], env, input)
        assert.equal(r.code, code, `${args.join(' ')}: ${r.stdout}`)
        oneLine(r)
        assert.match(r.stderr, message)
      }
      assert.equal(await count(), before)
    })

    test('promote, demote, disable, enable: the web panel rules, sessions end on disable, last admin kept', async () => {
      const hank = await reader(n, cookie, 'hank')
      const promoted = await cli(['user', 'promote', 'hank', ...db])
      assert.deepEqual([promoted.code, promoted.stdout], [0, 'is an administrator: hank\n'], promoted.stderr)
      assert.equal((await n.client.get('/api/v1/users', { cookie: hank })).status, 200, 'hank is an administrator now')
      const disabled = await cli(['user', 'disable', 'hank', '--json', ...db])
      assert.equal(disabled.code, 0, disabled.stderr)
      assert.equal(JSON.parse(disabled.stdout).enabled, false)
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie: hank })).status, 401, 'its session ended')
      await assert.rejects(n.client.login('hank', 'hank-password-123'))
      assert.equal((await cli(['user', 'enable', 'hank', ...db])).code, 0)
      await n.client.login('hank', 'hank-password-123')
      assert.equal((await cli(['user', 'demote', 'hank', ...db])).code, 0)

      // Leave one enabled human administrator (the bootstrap one), then try to remove it.
      for (const u of (await n.database.db.selectFrom('users').selectAll().execute()).filter(
        (u) => u.is_admin === 1 && u.kind === 'human' && u.username !== ADMIN,
      )) {
        assert.equal((await cli(['user', 'demote', u.username, ...db])).code, 0)
      }
      for (const change of ['demote', 'disable']) {
        const r = await cli(['user', change, ADMIN, ...db])
        assert.equal(r.code, 1, r.stdout)
        oneLine(r)
        assert.match(r.stderr, /administrator/)
      }
      await n.client.login(ADMIN, ADMIN_PASSWORD)
      const nobody = await cli(['user', 'promote', 'nobody', ...db])
      assert.equal(nobody.code, 1)
      assert.match(nobody.stderr, /no user "nobody"/)
      const changes = (await audit()).filter((e) => e.target === 'hank' && e.action === 'user.update')
      assert.deepEqual(
        changes.map((e) => e.details),
        [{ admin: false }, { enabled: true }, { enabled: false }, { admin: true }],
      )
    })

    test('revoke-sessions and reset-password end the sessions; the new password works, the old does not', async () => {
      const ivy = await reader(n, cookie, 'ivy')
      const revoked = await cli(['user', 'revoke-sessions', 'ivy', ...db])
      assert.deepEqual([revoked.code, revoked.stdout], [0, '1 session of ivy ended\n'], revoked.stderr)
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie: ivy })).status, 401)
      const again = await n.client.login('ivy', 'ivy-password-123')
      const file = passwordFile('ivy', 'ivy-new-password-456')
      const reset = await cli(['user', 'reset-password', 'ivy', '--password-file', file, ...db], env)
      assert.equal(reset.code, 0, reset.stderr)
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie: again })).status, 401)
      await assert.rejects(n.client.login('ivy', 'ivy-password-123'))
      await n.client.login('ivy', 'ivy-new-password-456')
      const system = await cli(['user', 'reset-password', 'ci-bot', '--password-file', file, ...db], env)
      assert.equal(system.code, 1)
      assert.match(system.stderr, /password/)
      const actions = (await audit()).filter((e) => e.target === 'ivy').map((e) => e.action)
      assert.deepEqual(actions.slice(0, 2), ['user.reset_password', 'user.revoke_sessions'])
    })

    test('target set: 1 without key material (nothing stored); commits NOTIFY_ACTION_KEY; list never shows a credential', async () => {
      const url = ['--url', 'http://127.0.0.1:9/run', '--allow-private']
      const noKey = await cli(['target', 'set', 'runbook', ...url, ...db])
      assert.equal(noKey.code, 1, noKey.stdout)
      oneLine(noKey)
      assert.match(noKey.stderr, /key/)
      assert.equal((await cli(['target', 'list', '--json', ...db])).stdout.trim(), '[]')

      const secret = 'target-credential-s3cret'
      const file = passwordFile('credential', secret)
      const set = await cli(['target', 'set', 'runbook', ...url, '--credential-file', file, ...db], {
        NOTIFY_ACTION_KEY: ACTION_KEY,
      })
      assert.equal(set.code, 0, set.stderr)
      assert.equal(set.stdout, 'target runbook created: http://127.0.0.1:9/run (with a bearer credential)\n')
      const committed = await n.database.db
        .selectFrom('settings')
        .select('value')
        .where('name', '=', 'action_encryption_key')
        .executeTakeFirst()
      assert.equal(committed?.value, Buffer.alloc(32, 7).toString('base64url'), 'the bootstrap key was committed')
      // The committed key is used from now on, whatever the variable says.
      const update = await cli(['target', 'set', 'runbook', ...url, '--description', 'restart a unit', ...db])
      assert.equal(update.code, 0, update.stderr)
      assert.match(update.stdout, /^target runbook updated: .*credential/)

      const list = await cli(['target', 'list', '--json', ...db])
      assert.ok(!list.stdout.includes(secret))
      const [target] = JSON.parse(list.stdout) as Array<Record<string, unknown>>
      assert.deepEqual(
        [target!.name, target!.allow_private, target!.has_credential, target!.description],
        ['runbook', true, true, 'restart a unit'],
      )
      // The server answers the same target (the API view of the row the command wrote).
      const api = await n.client.get('/api/v1/action-targets', { cookie })
      assert.equal(api.body.targets[0].has_credential, true)
      const table = await cli(['target', 'list', ...db])
      assert.match(
        table.stdout,
        /^NAME +KIND +URL +PRIVATE +CREDENTIAL +UPDATED\nrunbook +target +http:\/\/127\.0\.0\.1:9\/run +allowed +set /,
      )

      const removed = await cli(['target', 'set', 'runbook', ...url, '--no-credential', '--json', ...db])
      assert.equal(JSON.parse(removed.stdout).has_credential, false)
      const publicHttp = await cli(['target', 'set', 'web', '--url', 'http://example.org/x', ...db])
      assert.equal(publicHttp.code, 1)
      oneLine(publicHttp)
      assert.match(publicHttp.stderr, /https/)

      const deleted = await cli(['target', 'delete', 'runbook', ...db])
      assert.equal(deleted.code, 0, deleted.stderr)
      assert.equal((await n.client.get('/api/v1/action-targets', { cookie })).body.targets.length, 0)
      const gone = await cli(['target', 'delete', 'runbook', ...db])
      assert.equal(gone.code, 1)
      assert.match(gone.stderr, /runbook/)
      const entries = (await audit()).filter((e) => e.target === 'runbook')
      assert.deepEqual(
        entries.map((e) => [e.action, e.details.credential]),
        [
          ['action_target.delete', undefined],
          ['action_target.update', 'removed'],
          ['action_target.update', 'kept'],
          ['action_target.create', 'set'],
        ],
      )
      assert.ok(entries.every((e) => e.actor.startsWith('cli:')))
    })

    test('audit list pages with --limit and --before, as a table or JSON; bad numbers are refused', async () => {
      const all = await audit()
      assert.ok(all.length >= 4)
      const page = await cli(['audit', 'list', '--limit', '2', '--before', String(all[1]!.id), '--json', ...db])
      assert.deepEqual(
        (JSON.parse(page.stdout) as Audit[]).map((e) => e.id),
        [all[2]!.id, all[3]!.id],
      )
      const table = await cli(['audit', 'list', '--limit', '1', ...db])
      assert.match(table.stdout, /^ID +WHEN +ACTOR +ACTION +TARGET +DETAILS\n\d+ /)
      assert.equal(table.stdout.trim().split('\n').length, 2)
      for (const bad of [
        ['--limit', '0'],
        ['--limit', 'x'],
        ['--before', '-3'],
      ]) {
        const r = await cli(['audit', 'list', ...bad, ...db])
        assert.equal(r.code, 1, `${bad.join(' ')}: ${r.stderr}`)
        oneLine(r)
      }
    })

    test('backup while serve runs: a SQLite copy reads as the original; PostgreSQL is pointed to pg_dump', async () => {
      const file = join(dir.path, `${backend.name}-backup.db`)
      const r = await cli(['backup', ...db, file])
      if (backend.name !== 'sqlite') {
        assert.deepEqual(
          [r.code, r.stderr],
          [1, 'notify: backup copies a SQLite database; for PostgreSQL use pg_dump\n'],
        )
        return
      }
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /^backed up to .*-backup\.db \(\d+\.\d MiB, checked\)\n$/)
      const users = async (database: string) => {
        const list = await cli(['user', 'list', '--json', '--database', database])
        assert.equal(list.code, 0, list.stderr)
        return (JSON.parse(list.stdout) as { username: string }[]).map((u) => u.username)
      }
      const original = await users(n.config.database)
      assert.ok(original.includes(ADMIN))
      assert.deepEqual(await users(`sqlite:${file}`), original)
    })

    test('push keys shows the public key the server hands to browsers; push list never an endpoint or key', async () => {
      const keys = await cli(['push', 'keys', '--json', ...db])
      assert.equal(keys.code, 0, keys.stderr)
      const served = await n.client.get('/api/v1/push/key', { cookie })
      assert.equal(JSON.parse(keys.stdout).public_key, served.body.public_key)
      assert.doesNotMatch(keys.stdout, /private/i)
      const user = await n.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', ADMIN)
        .executeTakeFirstOrThrow()
      await saveSubscription(n.database.db, {
        userId: user.id,
        endpoint: 'https://push.example.net/send/capability-abc123',
        p256dh: 'BPubKeyOfTheBrowser',
        auth: 'authSecretXYZ',
        label: 'laptop',
      })
      const list = await cli(['push', 'list', '--user', ADMIN, '--json', ...db])
      assert.equal(list.code, 0, list.stderr)
      for (const secret of ['capability-abc123', 'BPubKeyOfTheBrowser', 'authSecretXYZ'])
        assert.ok(!list.stdout.includes(secret))
      const [row] = JSON.parse(list.stdout) as Array<Record<string, unknown>>
      assert.deepEqual([row!.username, row!.label, row!.push_service], [ADMIN, 'laptop', 'https://push.example.net'])
      const text = await cli(['push', 'keys', ...db])
      assert.match(
        text.stdout,
        /^VAPID public key \(applicationServerKey\): [A-Za-z0-9_-]{87}\ncreated .*; 1 subscription\n$/,
      )
      const nobody = await cli(['push', 'list', '--user', 'nobody', ...db])
      assert.equal(nobody.code, 1)
      assert.match(nobody.stderr, /no user "nobody"/)
    })
  })
}

test('push keys before any server ran says so; no admin command loads the server stack', async () => {
  const database = `sqlite:${join(dir.path, 'light.db')}`
  assert.equal((await cli(['migrate', '--database', database])).code, 0)
  const none = await cli(['push', 'keys', '--database', database])
  assert.equal(none.code, 1)
  oneLine(none)
  assert.match(none.stderr, /no VAPID key pair yet/)
  const commands = [
    ['user', 'create', 'jo', '--system'],
    ['user', 'promote', 'jo'],
    ['target', 'list'],
    ['audit', 'list'],
    ['push', 'list'],
  ]
  for (const args of commands) {
    const r = await loadedPackages([MAIN, ...args, '--database', database], { PATH: process.env.PATH ?? '' })
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    for (const heavy of ['fastify', 'undici', 'pg', 'pino', 'typebox', 'web-push']) {
      assert.ok(!r.packages.includes(heavy), `${args.join(' ')} loaded ${heavy}: ${r.packages.join(', ')}`)
    }
  }
})
