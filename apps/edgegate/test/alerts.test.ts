/**
 * `--alert-url` against a real notify (development mode, its ntfy-style `/hooks/<token>`): a
 * TLS certificate close to expiry reaches the team's inbox with its title, severity and tags;
 * an unreachable channel is logged and holds nothing up; plain http off loopback is refused.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { test } from 'node:test'
import { createTestCa, freePort, startChild, tempDir, waitFor } from '@gatehouse/testkit'
import { APP, call, cli, newDatabase, startEdgegate } from './helpers.ts'

const NOTIFY = join(APP, '..', 'notify', 'src', 'main.ts')
const sqliteOnly = async () => {
  throw new Error('unused')
}

test('a certificate near expiry reaches notify through --alert-url; an unreachable channel is only logged', async (t) => {
  const dir = tempDir('edgegate-alerts-')
  t.after(() => dir.remove())
  const token = randomBytes(24).toString('hex')
  const notifyPort = await freePort()
  const notify = await startChild({
    name: 'notify',
    command: process.execPath,
    args: [NOTIFY, '-listen', `127.0.0.1:${notifyPort}`, '-hook-id', token],
    env: { PATH: process.env.PATH ?? '', NOTIFY_DATABASE_URL: `sqlite:${join(dir.path, 'notify.db')}` },
    logFile: join(dir.path, 'notify.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${notifyPort}/readyz`)).ok,
  })
  t.after(() => notify.stop())
  const ca = createTestCa()
  t.after(() => ca.remove())
  const tls = { ca, server: ca.issueServer(undefined, { days: 5 }) }

  const gate = await startEdgegate(await newDatabase('sqlite', sqliteOnly), tls, [
    '--alert-url',
    `http://127.0.0.1:${notifyPort}/hooks/${token}`,
  ])
  t.after(() => gate.stop())
  const inbox = await waitFor('the alert in notify', async () => {
    const res = await fetch(`http://127.0.0.1:${notifyPort}/api/v1/notifications?q=certificate`)
    const body = (await res.json()) as { notifications: Array<Record<string, unknown>> }
    return body.notifications.length > 0 ? body.notifications : undefined
  })
  assert.equal(inbox.length, 1, 'one alert at start')
  const alert = inbox[0]!
  assert.equal(alert.title, 'edgegate: the TLS certificate expires soon')
  assert.equal(alert.severity, 'error', 'Priority: high')
  assert.match(String(alert.body), /^the TLS certificate \S+ expires in 4 days \(\S+Z\): nodes and browsers refuse/)
  assert.match(JSON.stringify(alert.content), /edgegate.*certificate/)

  // Nobody listening: the alert is logged as not delivered, and the control plane serves on.
  const closed = await freePort()
  const lonely = await startEdgegate(await newDatabase('sqlite', sqliteOnly), tls, [
    '--alert-url',
    `http://127.0.0.1:${closed}/hooks/${token}`,
  ])
  t.after(() => lonely.stop())
  await waitFor('the failure logged', () =>
    /"alert":"the TLS certificate expires soon","to":"http:\/\/127\.0\.0\.1:\d+".*"msg":"alert not delivered"/.test(
      lonely.child.log(),
    ),
  )
  assert.doesNotMatch(lonely.child.log(), new RegExp(token), 'the hook token is never logged')
  assert.equal((await call(tls, lonely.base, '/healthz')).status, 200)

  const refused = await cli([
    'serve',
    '--database',
    await newDatabase('sqlite', sqliteOnly),
    '--tls-cert',
    tls.server.certPath,
    '--tls-key',
    tls.server.keyPath,
    '--alert-url',
    `http://notify.example.test/hooks/${token}`,
  ])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /alert_url: plain http only on loopback/)
  assert.doesNotMatch(refused.stderr, new RegExp(token))
})
