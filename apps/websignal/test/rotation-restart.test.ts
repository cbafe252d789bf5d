/**
 * A restart of the agent while it still reads a rotated-away file (the seconds between
 * logrotate's rename and the server's reopening its log, nginx's USR1): the saved positions name
 * that file too, so the restarted agent reads on in it where it stopped. Every line is counted
 * exactly once, checked in the store per client address; a rotated file that is gone by then is
 * said once in the log.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { appendFileSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { after, before, test } from 'node:test'
import { createLogger, createTlsAgent, requestNoRedirect } from '@gatehouse/kit'
import {
  createTestCa,
  freePort,
  type Nginx,
  startChild,
  startNginx,
  startRedis,
  type Redis as TestRedis,
  tempDir,
} from '@gatehouse/testkit'
import { Redis } from 'ioredis'
import { line, MAIN, testAgent, waitFor, writeConfig } from './helpers.ts'

let redis: TestRedis
let client: Redis
before(async () => {
  redis = await startRedis()
  client = new Redis(redis.url)
})
after(async () => {
  client?.disconnect()
  await redis?.stop()
})

const T0 = Date.UTC(2026, 10, 25, 9, 0, 0)

/** Requests counted in the store per client address, over every bucket of the namespace. */
async function counted(namespace: string): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const key of await client.keys(`ws:agg:{${namespace}|*`)) {
    for (const [ip, value] of Object.entries(await client.hgetall(key))) {
      out.set(ip, (out.get(ip) ?? 0) + Number(value.split(',')[0]))
    }
  }
  return out
}

/** Lines from 10.0.0.<from> to 10.0.0.<to>, one per address. */
const lines = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => line(`10.0.0.${from + i}`, '/', 200, T0)).join('')

function memoryLogger() {
  const logged: Array<Record<string, unknown>> = []
  const sink = new PassThrough().on('data', (chunk: Buffer) => {
    for (const l of chunk.toString().split('\n')) if (l) logged.push(JSON.parse(l))
  })
  return { logged, logger: createLogger({ name: 'websignal', level: 'info', destination: sink }) }
}

/** An agent on the test's log, state folder and namespace, on a clock the test moves. */
async function agentOn(log: string, stateDir: string, namespace: string, clock: { ms: number }) {
  const { logged, logger } = memoryLogger()
  const a = await testAgent(
    redis.url,
    { state_dir: stateDir, store: { url: redis.url, namespace } },
    log,
    () => clock.ms,
    logger,
  )
  return { a, logged }
}

function setup(name: string) {
  const dir = tempDir(`websignal-${name}-`)
  after(() => dir.remove())
  const log = join(dir.path, 'access.log')
  writeFileSync(log, '')
  return { log, old: `${log}.1`, stateDir: join(dir.path, 'state'), namespace: `${name}${process.pid}` }
}

test('a restart while the rotated file is still read: its late lines are read on, every line counted once', async () => {
  const { log, old, stateDir, namespace } = setup('drainrestart')
  const clock = { ms: Date.now() }
  const first = await agentOn(log, stateDir, namespace, clock)
  appendFileSync(log, lines(1, 10))
  await first.a.tick()
  // logrotate: written but not read yet, renamed, a new empty file created.
  appendFileSync(log, lines(11, 13))
  renameSync(log, old)
  writeFileSync(log, '')
  await first.a.tick()
  // nginx goes on writing to the renamed file until USR1.
  appendFileSync(old, lines(14, 18))
  clock.ms += 1000
  await first.a.tick()
  // Written, then the agent stops before reading them.
  appendFileSync(old, lines(19, 22))
  appendFileSync(log, lines(23, 25))
  await first.a.close()
  const saved = JSON.parse(readFileSync(join(stateDir, 'offsets.json'), 'utf8'))[log]
  assert.equal(saved.draining?.[0]?.path, old, 'the saved state names the rotated file')
  // Written while no agent runs.
  appendFileSync(old, lines(26, 30))
  clock.ms += 2000
  const second = await agentOn(log, stateDir, namespace, clock)
  after(() => second.a.close())
  appendFileSync(old, lines(31, 33))
  appendFileSync(log, lines(34, 36))
  clock.ms += 1000
  await second.a.tick()
  // USR1: the old file stops growing and is let go after the grace period; the new one goes on.
  clock.ms += 5000
  await second.a.tick()
  appendFileSync(log, lines(37, 40))
  await second.a.tick()
  const counts = await counted(namespace)
  const expected = new Map(Array.from({ length: 40 }, (_, i) => [`10.0.0.${i + 1}`, 1]))
  assert.deepEqual(counts, expected)
  assert.deepEqual(
    second.logged.filter((l) => l.level === 'warn'),
    [],
    'nothing lost',
  )
  const after2 = JSON.parse(readFileSync(join(stateDir, 'offsets.json'), 'utf8'))[log]
  assert.equal(after2.draining, undefined, 'the drained file left the saved state')
})

test('a rotated file gone by the restart: said once, the new file read on', async () => {
  const { log, old, stateDir, namespace } = setup('draingone')
  const clock = { ms: Date.now() }
  const first = await agentOn(log, stateDir, namespace, clock)
  appendFileSync(log, lines(1, 5))
  await first.a.tick()
  renameSync(log, old)
  writeFileSync(log, '')
  await first.a.tick()
  appendFileSync(old, lines(6, 8))
  await first.a.tick()
  await first.a.close()
  appendFileSync(old, lines(9, 10))
  appendFileSync(log, lines(11, 12))
  rmSync(old)
  const second = await agentOn(log, stateDir, namespace, clock)
  after(() => second.a.close())
  await second.a.tick()
  await second.a.tick()
  const counts = await counted(namespace)
  assert.deepEqual(
    [...counts.keys()].sort((x, y) => Number(x.split('.')[3]) - Number(y.split('.')[3])),
    [1, 2, 3, 4, 5, 6, 7, 8, 11, 12].map((n) => `10.0.0.${n}`),
  )
  const warned = second.logged.filter((l) => l.level === 'warn')
  assert.equal(warned.length, 1)
  assert.match(String(warned[0]!.msg), /^a rotated log file read before the restart is gone/)
  assert.deepEqual([warned[0]!.file, warned[0]!.reason], [old, 'gone'])
})

test('nginx, logrotate and a restart of `websignal serve` before USR1: every request counted once', async () => {
  const ca = createTestCa()
  after(() => ca.remove())
  const server = ca.issueServer()
  let nginx: Nginx | undefined = await startNginx({ cert: server.cert, key: server.key })
  after(() => nginx?.stop())
  const tls = createTlsAgent({ ca: ca.ca })
  after(() => tls.close())
  let sent = 0
  const request = async () => {
    const r = await requestNoRedirect(`https://127.0.0.1:${nginx!.port}/`, { dispatcher: tls, timeoutMs: 5000 })
    assert.equal(r.status, 200)
    sent++
  }
  const requests = async (n: number) => {
    for (let i = 0; i < n; i++) await request()
  }
  const access = nginx.accessLog
  const rotated = `${access}.1`
  const stateDir = tempDir('websignal-nginx-state-')
  after(() => stateDir.remove())
  const namespace = `nginx${process.pid}`
  const port = await freePort()
  const c = writeConfig({
    listen: `127.0.0.1:${port}`,
    state_dir: stateDir.path,
    inputs: [{ path: access, format: 'combined', site: 'main', host: 'www.example.org' }],
    store: { url: redis.url, namespace },
    window: '1h',
    poll_interval: '50ms',
    flush_interval: '100ms',
    log_level: 'info',
  })
  after(() => c.dir.remove())
  const out = join(c.dir.path, 'websignal.log')
  const serve = () =>
    startChild({
      name: 'websignal',
      command: process.execPath,
      args: [MAIN, 'serve', '--config', c.path],
      logFile: out,
      probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
      timeoutMs: 30_000,
    })
  const total = async () => (await counted(namespace)).get('127.0.0.1') ?? 0
  let agent = await serve()
  after(() => agent.stop())
  await requests(5)
  await waitFor('the first requests counted', async () => (await total()) === 5)

  // logrotate's rename and `create`; nginx still writes to the renamed file.
  renameSync(access, rotated)
  writeFileSync(access, '')
  await requests(5)
  await waitFor('the rotation noticed', () => readFileSync(out, 'utf8').includes('input switched files'))
  await waitFor('the late requests counted', async () => (await total()) === 10)
  await requests(3)
  // Stopped (a deploy, a crash-restart loop) in the seconds before USR1, and started again.
  await agent.stop()
  assert.equal(agent.process.exitCode, 0)
  await requests(4)
  // status, meanwhile: the rotated file the agent was reading, and what of it waits.
  const status = spawnSync(process.execPath, [MAIN, 'status', '--config', c.path], { encoding: 'utf8' })
  assert.equal(status.status, 0, status.stderr)
  assert.match(
    status.stdout,
    new RegExp(
      `^  rotated file ${rotated.replace(/[.]/g, '\\.')} still read until the server reopens its log: (\\d+ B|[\\d.]+ KiB) behind$`,
      'm',
    ),
  )
  agent = await serve()
  await requests(3)
  // postrotate's USR1: nginx reopens its log; requests go to the new file from then on.
  const pid = Number(readFileSync(join(nginx.dir, 'nginx.pid'), 'utf8'))
  process.kill(pid, 'SIGUSR1')
  await waitFor('nginx writing to the new file', async () => {
    await request()
    return readFileSync(access).length > 0
  })
  await requests(5)
  await waitFor('every request counted', async () => (await total()) === sent)
  // Reading has caught up on both files and the old one was let go: nothing more will come.
  const offsets = join(stateDir.path, 'offsets.json')
  await waitFor('the rotated file let go and the new one read to its end', () => {
    const p = JSON.parse(readFileSync(offsets, 'utf8'))[access]
    return p.draining === undefined && p.offset === readFileSync(access).length
  })
  assert.equal(await total(), sent, `${sent} requests, each counted once`)
  assert.doesNotMatch(readFileSync(out, 'utf8'), /"level":"(warn|error)"/)
  await agent.stop()
  await nginx.stop()
  nginx = undefined
})
