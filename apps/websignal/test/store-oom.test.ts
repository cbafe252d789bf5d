/**
 * The shared Redis runs out of memory under a running agent (`maxmemory` reached with the
 * `noeviction` policy, Redis's default): every write is refused with an OOM error while reads
 * still work. What was read meanwhile is kept and stored once Redis has room again.
 */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import type { Signal } from '@gatehouse/kit'
import { freePort, tempDir } from '@gatehouse/testkit'
import { line, redisOn, testAgent, waitFor } from './helpers.ts'

test('Redis out of memory mid-run: refused writes are kept and stored once it has room', async () => {
  const dir = tempDir('websignal-oom-')
  after(() => dir.remove())
  const port = await freePort()
  const redis = await redisOn(port, dir.path)
  after(() => redis.stop())
  const a = await testAgent(`redis://127.0.0.1:${port}`, {
    flush_interval: '100ms',
    poll_interval: '50ms',
    store: { url: `redis://127.0.0.1:${port}`, namespace: 'oom', command_timeout: '300ms' },
  })
  after(() => a.close())
  await a.agent.start()
  const T0 = Date.now()
  // Below what Redis already uses: every write is refused from now on.
  await a.store.redis.config('SET', 'maxmemory', '1')
  a.append(line('203.0.113.66', '/.env', 404, T0).repeat(3))
  await waitFor('a refused flush counted', async () => (await a.metrics.storeFailures.get()).values[0]!.value > 0)
  assert.deepEqual(await a.store.outbox('signals').peek<Signal>(10), [])

  await a.store.redis.config('SET', 'maxmemory', '0')
  const queued = await waitFor('the signal read while Redis was full', async () => {
    const q = await a.store.outbox('signals').peek<Signal>(10)
    return q.length === 1 && q
  })
  assert.equal(queued[0]!.payload.connections, 3)
  assert.equal(redis.process.exitCode, null)
})
