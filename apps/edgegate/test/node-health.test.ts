/**
 * Gates gone quiet, on SQLite and PostgreSQL: `edgegate_nodes{kind,state}` and one log line per
 * transition (the health pass in-process, on a real database, with a clock the test moves), and
 * the state in `edgegate node list` and `status` (the CLI as a child process).
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { createMetrics } from '@gatehouse/kit'
import { freePort, metric } from '@gatehouse/testkit'
import type { Kysely } from 'kysely'
import { insertAdmin, removeAdmin, replaceAdminToken } from '../src/admins/store.ts'
import type { Alert } from '../src/alerts.ts'
import { openEdgeDatabase } from '../src/db/open.ts'
import type { DB } from '../src/db/schema.ts'
import { startNodeHealth } from '../src/nodes/health.ts'
import { cli, DIALECTS, lazyPostgres, newDatabase, seed } from './helpers.ts'

const pg = lazyPostgres()
after(() => pg.stop())
const MINUTE = 60_000

/** A health pass on `db` with a clock the test moves, recording what it logs and alerts. */
function watch(db: Kysely<DB>, now: () => number) {
  const lines: { level: string; msg: string }[] = []
  const logger = {
    warn: (_f: unknown, msg: string) => void lines.push({ level: 'warn', msg }),
    info: (_f: unknown, msg: string) => void lines.push({ level: 'info', msg }),
  } as never
  const metrics = createMetrics('edgegate')
  const alerts: Alert[] = []
  const health = startNodeHealth({ db, metrics, logger, alert: (a) => void alerts.push(a), now, intervalMs: 3_600_000 })
  after(() => health.stop())
  return { health, metrics, alerts, lines }
}

for (const dialect of DIALECTS) {
  describe(`node health on ${dialect}`, () => {
    test('a gate or websignal node not heard from for 10 minutes is silent, after a grace from start; a log watcher never is', async () => {
      const url = await newDatabase(dialect, pg.get)
      await seed(url, [
        { id: 'gate-a', kind: 'sshgate' },
        { id: 'gate-b', kind: 'tlsgate' },
        { id: 'web-a', kind: 'websignal' },
        { id: 'lw-a', kind: 'log_watcher' },
        { id: 'gate-new', kind: 'sshgate' },
        { id: 'gate-off', kind: 'sshgate', active: false },
      ])
      const d = await openEdgeDatabase(url, 2)
      after(() => d.close())
      let now = Date.now()
      const seen = (id: string, at: number) =>
        d.db.updateTable('nodes').set({ last_seen_ms: at }).where('instance_id', '=', id).execute()
      // Heard from long before this server started: gate-a, web-a, and lw-a (which sends only signals).
      await seen('gate-a', now - 60 * MINUTE)
      await seen('web-a', now - 60 * MINUTE)
      await seen('lw-a', now - 60 * MINUTE)
      await seen('gate-b', now)
      const { health, metrics, alerts, lines } = watch(d.db, () => now)
      const count = async (kind: string, state: string) =>
        metric(await metrics.registry.metrics(), 'edgegate_nodes', { kind, state })

      await health.check()
      assert.equal(await count('sshgate', 'silent'), 0, 'a gate is not blamed for the first 10 minutes after start')
      assert.equal(await count('sshgate', 'active'), 2)
      assert.equal(await count('sshgate', 'disabled'), 1)
      assert.equal(lines.length, 0)

      now += 11 * MINUTE
      await seen('gate-b', now - MINUTE)
      await health.check()
      assert.equal(await count('sshgate', 'silent'), 1, 'gate-a; gate-new was never seen')
      assert.equal(await count('tlsgate', 'active'), 1)
      assert.equal(await count('websignal', 'silent'), 1, 'websignal sends at least every 2 minutes')
      assert.equal(await count('log_watcher', 'active'), 1, 'a log watcher is quiet when there is nothing to send')
      assert.deepEqual(
        lines.map((l) => l.level),
        ['warn', 'warn'],
      )
      assert.match(
        lines[0]!.msg,
        /^node gate-a has not been heard from since \S+Z: it may be down, cut off or refused .*, and it enforces the decisions it last pulled$/,
      )
      assert.match(lines[1]!.msg, /^node web-a has not been heard from .*, and no web signals arrive from it$/)
      await health.check()
      assert.equal(lines.length, 2, 'said once')

      await seen('gate-a', now)
      await health.check()
      assert.equal(await count('sshgate', 'silent'), 0)
      assert.deepEqual(lines[2], { level: 'info', msg: 'node gate-a is heard from again (or was disabled or removed)' })
      // The same transitions on the alert channel (--alert-url), with the log line as the text.
      assert.deepEqual(
        alerts.map((a) => [a.title, a.priority, a.tags]),
        [
          ['node gate-a is silent', 'high', ['node-silent', 'sshgate']],
          ['node web-a is silent', 'high', ['node-silent', 'websignal']],
          ['node gate-a is heard from again', 'default', ['node-back']],
        ],
      )
      assert.equal(alerts[0]!.message, lines[0]!.msg)

      // The client certificate gate-b last presented expires in 5 days: counted, named once a day.
      await d.db
        .updateTable('nodes')
        .set({ cert_expires_ms: now + 5 * 86_400_000 + 60_000 })
        .where('instance_id', '=', 'gate-b')
        .execute()
      await seen('gate-b', now)
      await health.check()
      assert.equal(metric(await metrics.registry.metrics(), 'edgegate_node_certificates_expiring'), 1)
      assert.match(
        lines.at(-1)!.msg,
        /^node gate-b's client certificate expires in 5 days \(\S+Z\): this server refuses the node once it has; renew it on the node/,
      )
      assert.deepEqual(alerts.at(-1)!.title, "node gate-b's client certificate expires soon")
      const said = lines.length
      await health.check()
      assert.equal(lines.length, said, 'once a day')
      now += 86_400_000 + 1000
      await seen('gate-a', now)
      await seen('gate-b', now)
      await health.check()
      assert.match(lines.at(-1)!.msg, /^node gate-b's client certificate expires in 4 days/)
    })

    test('several processes on one database announce each transition once, and a restart does not repeat it', async () => {
      const url = await newDatabase(dialect, pg.get)
      await seed(url, [
        { id: 'gate-x', kind: 'sshgate' },
        { id: 'gate-c', kind: 'tlsgate' },
      ])
      const d = await openEdgeDatabase(url, 2)
      after(() => d.close())
      let now = Date.now()
      const seen = (id: string, at: number) =>
        d.db.updateTable('nodes').set({ last_seen_ms: at }).where('instance_id', '=', id).execute()
      await seen('gate-x', now - 60 * MINUTE)
      await seen('gate-c', now)
      await d.db
        .updateTable('nodes')
        .set({ cert_expires_ms: now + 3 * 86_400_000 })
        .where('instance_id', '=', 'gate-c')
        .execute()
      const said: string[] = []
      const healthPass = (name: string) =>
        startNodeHealth({
          db: d.db,
          metrics: createMetrics('edgegate'),
          logger: { warn: () => {}, info: () => {} } as never,
          alert: (a) => void said.push(`${name}: ${a.title}`),
          now: () => now,
          intervalMs: 3_600_000,
        })
      // Each pass runs once as it starts: the second process starts once the first one's pass is
      // done, or the two first passes race for the claim and either may win.
      const one = healthPass('one')
      await one.check()
      const two = healthPass('two')
      await two.check()
      const both = async () => {
        await one.check()
        await two.check()
      }
      assert.deepEqual(said, ["one: node gate-c's client certificate expires soon"], 'the certificate once, not twice')
      now += 11 * MINUTE
      await seen('gate-c', now)
      await both()
      assert.deepEqual(said.slice(1), ['one: node gate-x is silent'])
      await seen('gate-x', now)
      await two.check()
      await one.check()
      assert.deepEqual(said.slice(2), ['two: node gate-x is heard from again'])

      // Silent again; then both stop, and a new process (inside its grace after start) does not
      // announce it again; once the node is heard from, it says so once.
      now += 11 * MINUTE
      await seen('gate-c', now)
      await both()
      assert.deepEqual(said.slice(3), ['one: node gate-x is silent'])
      await one.stop()
      await two.stop()
      const three = healthPass('three')
      after(() => three.stop())
      // Its first pass starts with it (a turn later): let it read this clock before the jump,
      // as a real start would, or it sees gate-c eleven minutes late.
      await three.check()
      now += 11 * MINUTE
      await seen('gate-c', now)
      await three.check()
      assert.equal(said.length, 4, 'no repeat after the restart')
      now += 12 * 60 * MINUTE
      await seen('gate-c', now)
      await three.check()
      assert.equal(said.length, 4, 'still silent, still said once')
      await seen('gate-x', now)
      await three.check()
      assert.deepEqual(said.slice(4), ['three: node gate-x is heard from again'])
      now += 12 * 60 * MINUTE
      await seen('gate-c', now)
      await seen('gate-x', now)
      await three.check()
      assert.deepEqual(
        said.slice(5),
        ["three: node gate-c's client certificate expires soon"],
        'a day later, once more',
      )
    })

    test('an administrator token is named once a day within 14 days of its expiry and once when expired; a new token starts afresh', async () => {
      const url = await newDatabase(dialect, pg.get)
      const d = await openEdgeDatabase(url, 2)
      after(() => d.close())
      let now = Date.now()
      const DAY = 86_400_000
      await insertAdmin(d.db, 'ci-bot', 'hash-1', now, now + 20 * DAY)
      await insertAdmin(d.db, 'alice', 'hash-2', now, null)
      const { health, metrics, alerts, lines: logged } = watch(d.db, () => now)
      const said = () => logged.map((l) => l.msg)
      const expiring = async () => metric(await metrics.registry.metrics(), 'edgegate_admin_tokens_expiring')

      await health.check()
      assert.equal(await expiring(), 0, 'twenty days left: nothing to say')
      assert.deepEqual(said(), [])
      now += 10 * DAY
      await health.check()
      await health.check()
      assert.equal(await expiring(), 1)
      assert.deepEqual(said(), [
        `administrator ci-bot's token expires in 10 days (${new Date(now + 10 * DAY).toISOString()}): whatever uses it is refused then; issue a new one with edgegate admin rotate-token ci-bot`,
      ])
      assert.deepEqual(
        alerts.map((a) => [a.title, a.priority, a.tags]),
        [["administrator ci-bot's token expires soon", 'high', ['admin-token']]],
      )
      now += DAY + 1000
      await health.check()
      assert.match(said().at(-1)!, /^administrator ci-bot's token expires in 8 days/, 'again the next day')
      now += 10 * DAY
      await health.check()
      await health.check()
      now += 2 * DAY
      await health.check()
      assert.equal(said().length, 3, 'expired: said once, not every day')
      assert.match(
        said()[2]!,
        /^administrator ci-bot's token expired on \S+Z: it is refused; .*edgegate admin remove ci-bot$/,
      )
      assert.equal(await expiring(), 1)

      // A new token that expires too is announced anew, though the old one's expiry was said.
      assert.ok(await replaceAdminToken(d.db, 'ci-bot', 'hash-3', now + DAY))
      await health.check()
      assert.match(said().at(-1)!, /^administrator ci-bot's token expires in 1 day /)
      assert.ok(await removeAdmin(d.db, 'ci-bot'))
      await health.check()
      assert.equal(await expiring(), 0)
      assert.deepEqual(
        await d.db.selectFrom('node_alerts').selectAll().execute(),
        [],
        'a removed administrator leaves no claim behind',
      )
    })

    test('node list and status show a silent gate', async () => {
      const url = await newDatabase(dialect, pg.get)
      await seed(url, [
        { id: 'gate-quiet', kind: 'sshgate' },
        { id: 'gate-ok', kind: 'sshgate' },
      ])
      const d = await openEdgeDatabase(url, 2)
      try {
        await d.db
          .updateTable('nodes')
          .set({ last_seen_ms: Date.now() - 30 * MINUTE })
          .where('instance_id', '=', 'gate-quiet')
          .execute()
        await d.db.updateTable('nodes').set({ last_seen_ms: Date.now() }).where('instance_id', '=', 'gate-ok').execute()
      } finally {
        await d.close()
      }
      const list = await cli(['node', 'list', '--json', '--database', url])
      assert.equal(list.code, 0, list.stderr)
      assert.deepEqual(
        (JSON.parse(list.stdout) as { instance_id: string; state: string }[]).map((n) => [n.instance_id, n.state]),
        [
          ['gate-ok', 'active'],
          ['gate-quiet', 'silent'],
        ],
      )
      // No serve runs on this database here: status says so, and that it may be why a node is silent.
      const nobody = await freePort()
      const status = await cli(['status', '--database', url, '--listen', `127.0.0.1:${nobody}`])
      assert.equal(status.code, 0, status.stderr)
      assert.match(
        status.stdout,
        /^server: not answering at https:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED; listen address from --listen\)/,
      )
      assert.match(
        status.stdout,
        /^nodes: 2 registered, 2 active, 2 seen in the last 24 hours, 1 silent \(not heard from for 10 minutes: the server not answering may be why\)$/m,
      )
      assert.match(status.stdout, /^gate-quiet +sshgate +silent +/m)
    })
  })
}
