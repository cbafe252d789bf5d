/**
 * The shared Redis turned into a read-only replica under a running agent (what a failover does
 * to the old master: `REPLICAOF`, every write refused with READONLY while pings and reads still
 * answer). One line says why the counts are not stored, readiness names the refusal instead of
 * calling the store unreachable, what was read meanwhile is stored once writes are taken again,
 * and one line says so.
 */
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { after, test } from 'node:test'
import { createLogger, type Signal } from '@gatehouse/kit'
import { freePort, tempDir } from '@gatehouse/testkit'
import { line, redisOn, testAgent, waitFor } from './helpers.ts'

test('Redis demoted to a read-only replica mid-run: said once, readiness names it, the counts are stored once it takes writes', async () => {
  const dir = tempDir('websignal-replica-')
  after(() => dir.remove())
  const port = await freePort()
  const redis = await redisOn(port, dir.path)
  after(() => redis.stop())
  const logged: Array<{ level: string; msg: string; err?: { message: string }; failures?: number }> = []
  const sink = new PassThrough().on('data', (chunk: Buffer) => {
    for (const text of chunk.toString().split('\n')) if (text) logged.push(JSON.parse(text))
  })
  const a = await testAgent(
    `redis://127.0.0.1:${port}`,
    {
      flush_interval: '100ms',
      poll_interval: '50ms',
      store: { url: `redis://127.0.0.1:${port}`, namespace: 'replica', command_timeout: '300ms' },
    },
    undefined,
    undefined,
    createLogger({ name: 'websignal', level: 'info', destination: sink }),
  )
  after(() => a.close())
  await a.agent.start()
  const T0 = Date.now()
  // A replica of a master that is not there: it keeps its data and refuses every write.
  await a.store.redis.call('REPLICAOF', '127.0.0.1', String(await freePort()))
  a.append(line('203.0.113.66', '/.env', 404, T0).repeat(3))
  await waitFor('several refused flushes', async () => (await a.metrics.storeFailures.get()).values[0]!.value >= 5)
  // The health check runs every second: it has seen the store answer the ping by now.
  await new Promise((resolve) => setTimeout(resolve, 1200))
  assert.deepEqual(
    a.agent.readiness().failing.store?.replace(/\. script: .*$/, ''),
    "the store does not take writes (READONLY You can't write against a read only replica",
  )
  assert.deepEqual(await a.store.outbox('signals').peek<Signal>(10), [])

  await a.store.redis.call('REPLICAOF', 'NO', 'ONE')
  const queued = await waitFor('the signal read while Redis refused writes', async () => {
    const q = await a.store.outbox('signals').peek<Signal>(10)
    return q.length === 1 && q
  })
  assert.equal(queued[0]!.payload.connections, 3)
  await waitFor('ready again', async () => a.agent.readiness().ready)
  assert.deepEqual(
    logged.map((l) => [l.level, l.msg]),
    [
      ['warn', 'storing the counts failed: what was read is kept and stored once the store takes it'],
      ['info', 'the store takes the counts again'],
    ],
  )
  assert.match(logged[0]!.err?.message ?? '', /^READONLY/)
  assert.ok(logged[1]!.failures! >= 5, String(logged[1]!.failures))
})
