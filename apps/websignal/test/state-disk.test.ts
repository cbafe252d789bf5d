/**
 * The state folder's disk (read positions, `offsets.json`) fills up under a running agent: the
 * agent goes on reading and storing, says once that it cannot save its positions, and saves them
 * again once space is freed. Before, the failed save was an unhandled rejection and the process
 * exited, on every restart again while the disk stayed full.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { freePort, mountSmallDisk, startChild, startRedis, type Redis as TestRedis, tempDir } from '@gatehouse/testkit'
import { line, MAIN, metric, waitFor, writeConfig } from './helpers.ts'

let redis: TestRedis

before(async () => {
  redis = await startRedis()
})
after(async () => {
  await redis?.stop()
})

const UNSAVED = 'read positions cannot be saved'

test('a full state disk: lines are still read and stored, the failure logged once, positions saved again once freed', async (t) => {
  const disk = mountSmallDisk('websignal-state-', 1)
  t.after(() => disk.remove())
  const logs = tempDir('websignal-state-logs-')
  t.after(() => logs.remove())
  const log = join(logs.path, 'access.log')
  writeFileSync(log, '')
  const port = await freePort()
  const stateDir = join(disk.path, 'state')
  const c = writeConfig({
    listen: `127.0.0.1:${port}`,
    state_dir: stateDir,
    inputs: [{ path: log, format: 'combined', site: 'main', host: 'www.example.org' }],
    store: { url: redis.url, namespace: `state${process.pid}` },
    window: '1h',
    poll_interval: '50ms',
    flush_interval: '100ms',
    log_level: 'info',
  })
  t.after(() => c.dir.remove())
  const child = await startChild({
    name: 'websignal-state',
    command: process.execPath,
    args: [MAIN, 'serve', '--config', c.path],
    logFile: join(c.dir.path, 'websignal.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
    timeoutMs: 30_000,
  })
  t.after(() => child.stop())
  const offsets = join(stateDir, 'offsets.json')
  const saved = () => {
    try {
      return (JSON.parse(readFileSync(offsets, 'utf8')) as Record<string, { offset: number }>)[log]?.offset
    } catch {
      return undefined
    }
  }
  const append = (n: number, ip: string) => {
    const text = line(ip, '/index.html', 200, Date.now()).repeat(n)
    writeFileSync(log, text, { flag: 'a' })
  }

  append(5, '198.51.100.1')
  await waitFor('the first positions saved', async () => saved() !== undefined && saved()! > 0)
  const first = saved()!

  disk.fill()
  append(5, '198.51.100.2')
  await waitFor('ten lines read', async () => (await metric(port, 'websignal_lines_parsed_total')) === 10)
  await waitFor('the failed save logged', async () => child.log().includes(UNSAVED))
  // More ticks fail the same way, and say nothing more.
  append(5, '198.51.100.3')
  await waitFor('fifteen lines read', async () => (await metric(port, 'websignal_lines_parsed_total')) === 15)
  await new Promise((r) => setTimeout(r, 500))
  assert.equal(child.process.exitCode, null, `websignal exited:\n${child.log()}`)
  assert.equal(child.log().split(UNSAVED).length - 1, 1, child.log())
  assert.equal(saved(), first)
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200)

  disk.free()
  await waitFor(
    'the positions saved again',
    async () => saved()! > first && child.log().includes('read positions saved again'),
  )
  assert.doesNotMatch(child.log(), /unhandled|uncaught/i)
})
