/**
 * `--alert-url` against a real notify (development mode, its ntfy-style `/hooks/<token>`): a
 * TLS certificate close to expiry reaches the team's inbox with its title, severity and tags;
 * one raised while the channel is down waits and arrives once it is up; plain http off loopback is refused.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { test } from 'node:test'
import { createTestCa, freePort, startChild, tempDir, waitFor } from '@gatehouse/testkit'
import { APP, alertCatcher, call, cli, newDatabase, startEdgegate } from './helpers.ts'

const NOTIFY = join(APP, '..', 'notify', 'src', 'main.ts')
const sqliteOnly = async () => {
  throw new Error('unused')
}

/** notify in development mode on `port`, taking ntfy-style posts at `/hooks/<token>`. */
function startNotify(port: number, token: string, base: string) {
  return startChild({
    name: 'notify',
    command: process.execPath,
    args: [NOTIFY, '-listen', `127.0.0.1:${port}`, '-hook-id', token],
    env: { PATH: process.env.PATH ?? '', NOTIFY_DATABASE_URL: `sqlite:${base}.db` },
    logFile: `${base}.log`,
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok,
  })
}

test('a certificate near expiry reaches notify through --alert-url; one raised while notify is down arrives once it is up', async (t) => {
  const dir = tempDir('edgegate-alerts-')
  t.after(() => dir.remove())
  const token = randomBytes(24).toString('hex')
  const notifyPort = await freePort()
  const notify = await startNotify(notifyPort, token, join(dir.path, 'notify'))
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

  // Nobody listening yet: the alert is logged as waiting, the control plane serves on, and
  // once notify comes up on that port the held alert arrives, saying when it was raised.
  const late = await freePort()
  const lonely = await startEdgegate(await newDatabase('sqlite', sqliteOnly), tls, [
    '--alert-url',
    `http://127.0.0.1:${late}/hooks/${token}`,
  ])
  t.after(() => lonely.stop())
  await waitFor('the failure logged', () =>
    /"alert":"the TLS certificate expires soon","to":"http:\/\/127\.0\.0\.1:\d+".*"msg":"alert not delivered; it waits and is tried again"/.test(
      lonely.child.log(),
    ),
  )
  assert.equal((await call(tls, lonely.base, '/healthz')).status, 200)
  assert.match((await call(tls, lonely.base, '/metrics')).body as string, /edgegate_alerts_queued 1/)
  const lateNotify = await startNotify(late, token, join(dir.path, 'notify-late'))
  t.after(() => lateNotify.stop())
  const held = await waitFor(
    'the held alert delivered',
    async () => {
      const res = await fetch(`http://127.0.0.1:${late}/api/v1/notifications?q=certificate`)
      const body = (await res.json()) as { notifications: Array<Record<string, unknown>> }
      return body.notifications.length > 0 ? body.notifications : undefined
    },
    60_000,
  )
  assert.equal(held.length, 1)
  assert.match(String(held[0]!.body), /\(raised at \S+Z; held while the channel was unreachable\)$/)
  assert.match(
    (await call(tls, lonely.base, '/metrics')).body as string,
    /edgegate_alerts_total\{result="delivered"\} 1/,
  )
  assert.doesNotMatch(lonely.child.log(), new RegExp(token), 'the hook token is never logged')

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

test('the alert channel keeps order through failures, drops what the channel refuses, and bounds what it holds', async (t) => {
  const { createMetrics } = await import('@gatehouse/kit')
  const { alertChannel } = await import('../src/alerts.ts')
  const answers: number[] = [503, 200, 200, 404, 200]
  const catcher = await alertCatcher({ path: '/hooks/secret-token', answer: () => answers.shift() ?? 200 })
  t.after(() => catcher.close())
  const { received } = catcher
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = []
  const logger = {
    warn: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'warn', fields, msg }),
    info: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'info', fields, msg }),
    error: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'error', fields, msg }),
  } as never
  const metrics = createMetrics('edgegate')
  const channel = alertChannel(catcher.url, logger, { metrics, firstRetryMs: 50 })
  t.after(() => channel.stop())
  const alert = (title: string) => ({ title, message: `about ${title}`, priority: 'high' as const, tags: ['test'] })

  // A 503 holds the first alert and everything behind it; the retry delivers them in order.
  channel.send(alert('a'))
  channel.send(alert('b'))
  await waitFor('a and b delivered', () => received.length === 2 && channel.pending() === 0)
  assert.deepEqual(
    received.map((r) => r.title),
    ['edgegate: a', 'edgegate: b'],
  )
  assert.match(received[0]!.body, /^about a\n\n\(raised at \S+Z; held while the channel was unreachable\)$/)
  assert.ok(lines.some((l) => l.msg === 'alert not delivered; it waits and is tried again' && l.fields.alert === 'a'))
  assert.ok(lines.some((l) => l.level === 'info' && /answers again/.test(l.msg)))

  // A 404 is the channel refusing this URL: logged, dropped, not retried; the next one goes on.
  channel.send(alert('c'))
  channel.send(alert('d'))
  await waitFor('d delivered', () => received.length === 3 && channel.pending() === 0)
  assert.equal(received[2]!.title, 'edgegate: d')
  const refused = lines.find((l) => l.level === 'error')
  assert.equal(refused?.fields.alert, 'c')
  assert.equal(refused?.fields.status, 404)
  assert.match(refused!.msg, /refused by the channel/)

  // Nobody answering: the newest 100 wait, older ones are dropped and counted; shutdown names the rest.
  const closed = await freePort()
  const down = alertChannel(`http://127.0.0.1:${closed}/hooks/secret-token`, logger, {
    metrics: createMetrics('edgegate'),
    firstRetryMs: 60_000,
  })
  for (let i = 0; i < 105; i++) down.send(alert(`n${i}`))
  assert.equal(down.pending(), 100)
  assert.ok(lines.some((l) => /queue full/.test(l.msg)))
  down.stop()
  const last = lines.at(-1)!
  assert.equal(last.msg, 'alerts not delivered before shutdown')
  assert.equal((last.fields.alerts as string[]).at(-1), 'n104')
  assert.doesNotMatch(JSON.stringify(lines), /secret-token/, 'the token is never logged')
  const text = await metrics.registry.metrics()
  assert.match(text, /edgegate_alerts_total\{result="delivered"\} 3/)
  assert.match(text, /edgegate_alerts_total\{result="refused"\} 1/)
})

test('alerts of one kind raised together go out as one, and one held by a channel that is down takes in the later ones', async (t) => {
  const { createMetrics } = await import('@gatehouse/kit')
  const { alertChannel } = await import('../src/alerts.ts')
  let answer = 200
  const catcher = await alertCatcher({ path: '/hooks/t', answer: () => answer })
  t.after(() => catcher.close())
  const { received } = catcher
  const logger = { warn: () => {}, info: () => {}, error: () => {} } as never
  const metrics = createMetrics('edgegate')
  const channel = alertChannel(catcher.url, logger, {
    metrics,
    firstRetryMs: 50,
    groupWaitMs: 300,
  })
  t.after(() => channel.stop())
  const silent = (id: string, priority: 'high' | 'urgent' = 'high') => ({
    title: `node ${id} is silent`,
    message: `node ${id} has not been heard from`,
    priority,
    tags: ['node-silent', id.startsWith('web') ? 'websignal' : 'sshgate'],
    group: { key: 'node-silent', subject: id, plural: 'nodes are silent' },
  })

  // Three silent nodes and an alert of no group: one grouped alert, then the other, in order.
  channel.send(silent('gate-a'))
  channel.send(silent('gate-b'))
  channel.send({
    title: 'the TLS certificate expires soon',
    message: 'renew it',
    priority: 'high',
    tags: ['certificate'],
  })
  channel.send(silent('web-c', 'urgent'))
  await waitFor('both delivered', () => received.length === 2 && channel.pending() === 0)
  assert.deepEqual(received[0], {
    title: 'edgegate: 3 nodes are silent: gate-a, gate-b, web-c',
    priority: 'urgent',
    tags: 'edgegate,node-silent,sshgate,websignal',
    body: [
      '3 nodes are silent: gate-a, gate-b, web-c',
      'node gate-a has not been heard from',
      'node gate-b has not been heard from',
      'node web-c has not been heard from',
    ].join('\n\n'),
  })
  assert.equal(received[1]!.title, 'edgegate: the TLS certificate expires soon')

  // One alone is sent as it is, after the wait.
  channel.send(silent('gate-d'))
  // The channel counts it delivered once the answer is in, a moment after the catcher has it.
  await waitFor('gate-d delivered', () => received.length === 3 && channel.pending() === 0)
  assert.equal(received[2]!.title, 'edgegate: node gate-d is silent')
  assert.equal(received[2]!.body, 'node gate-d has not been heard from')

  // The channel down: 150 nodes going silent one after another are one alert (the queue holds
  // 100), naming the first 50 nodes and counting the rest, quoting the first 20 messages.
  answer = 503
  for (let i = 0; i < 150; i++) channel.send(silent(`n${i}`))
  assert.equal(channel.pending(), 1)
  await new Promise((resolve) => setTimeout(resolve, 500))
  answer = 200
  await waitFor('the held group delivered', () => received.length === 4 && channel.pending() === 0)
  const held = received[3]!
  assert.match(held.title, /^edgegate: 150 nodes are silent: n0, n1, n2, /)
  assert.equal(held.title.length, 200, 'the title header is cut at 200 characters')
  const names = Array.from({ length: 50 }, (_, i) => `n${i}`).join(', ')
  assert.ok(held.body.startsWith(`150 nodes are silent: ${names}, and 100 more\n\n`), held.body)
  assert.ok(Buffer.byteLength(held.body) < 4096, "within ntfy's message limit")
  assert.equal(held.body.match(/has not been heard from/g)?.length, 20)
  assert.match(held.body, /\(and 130 more like these\)\n\n\(raised at \S+Z; held while the channel was unreachable\)$/)
  const text = await metrics.registry.metrics()
  assert.match(text, /edgegate_alerts_total\{result="delivered"\} 155/, 'counted by alert, not by post')

  // Long messages: as many as fit in the body, the rest counted.
  for (let i = 0; i < 30; i++) {
    channel.send({ ...silent(`long${i}`), message: `node long${i}: ${'x'.repeat(400)}` })
  }
  await waitFor('the long group delivered', () => received.length === 5 && channel.pending() === 0)
  const long = received[4]!.body
  const quoted = long.match(/^node long\d+: x+$/gm)?.length ?? 0
  assert.ok(quoted >= 5 && quoted < 20, `${quoted} messages quoted`)
  assert.ok(long.endsWith(`(and ${30 - quoted} more like these)`), long.slice(-80))
  assert.ok(Buffer.byteLength(long) < 4096)
})

test('edgegate alert test: delivered to a real notify; a wrong token is refused; nobody listening is said so; the token is never printed', async (t) => {
  const dir = tempDir('edgegate-alert-test-')
  t.after(() => dir.remove())
  const token = randomBytes(24).toString('hex')
  const port = await freePort()
  const notify = await startNotify(port, token, join(dir.path, 'notify'))
  t.after(() => notify.stop())

  const ok = await cli(['alert', 'test', '--alert-url', `http://127.0.0.1:${port}/hooks/${token}`])
  assert.equal(ok.code, 0, ok.stderr)
  assert.equal(ok.stdout, `test alert delivered to http://127.0.0.1:${port}\n`)
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/notifications?q=test`)
  const { notifications } = (await res.json()) as { notifications: Array<Record<string, unknown>> }
  assert.equal(notifications.length, 1)
  assert.equal(notifications[0]!.title, 'edgegate: test alert')
  assert.match(String(notifications[0]!.body), /^A test from "edgegate alert test" on \S+ at \S+Z: edgegate's alerts/)

  const wrong = randomBytes(24).toString('hex')
  const refused = await cli(['alert', 'test'], { EDGEGATE_ALERT_URL: `http://127.0.0.1:${port}/hooks/${wrong}` })
  assert.equal(refused.code, 1)
  assert.match(
    refused.stderr,
    new RegExp(
      `^edgegate: the channel at http://127\\.0\\.0\\.1:${port} refused the alert \\(HTTP 4\\d\\d\\): check the token`,
    ),
  )
  const closed = await freePort()
  const down = await cli(['alert', 'test', '--alert-url', `http://127.0.0.1:${closed}/hooks/${token}`])
  assert.equal(down.code, 1)
  assert.match(down.stderr, /^edgegate: the alert did not reach the channel: .*ECONNREFUSED/)
  const none = await cli(['alert', 'test'])
  assert.equal(none.code, 2)
  assert.match(none.stderr, /give --alert-url/)
  for (const r of [ok, refused, down]) {
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(`${token}|${wrong}`), 'the token is never printed')
  }
})
