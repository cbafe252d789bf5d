/** Redis stopped and restarted on the same port mid-run: readiness drops and comes back, nothing read is lost. */
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import type { Signal } from '@gatehouse/kit'
import { freePort, tempDir } from '@gatehouse/testkit'
import { line, redisOn, testAgent, waitFor } from './helpers.ts'

test('store restart mid-run', async () => {
  const dir = tempDir('websignal-outage-')
  after(() => dir.remove())
  const port = await freePort()
  let redis = await redisOn(port, dir.path)
  after(() => redis.stop())
  const a = await testAgent(`redis://127.0.0.1:${port}`, {
    flush_interval: '100ms',
    poll_interval: '50ms',
    store: { url: `redis://127.0.0.1:${port}`, namespace: 'outage', command_timeout: '300ms' },
  })
  after(() => a.close())
  await a.agent.start()
  assert.equal(a.agent.readiness().ready, true)
  const T0 = Date.now()
  await redis.stop()
  // Read while the store is down: kept in memory, retried each tick.
  a.append(line('203.0.113.66', '/.env', 404, T0).repeat(3))
  await waitFor('readiness to drop', async () => !a.agent.readiness().ready)
  assert.ok((await a.metrics.storeFailures.get()).values[0]!.value > 0)
  redis = await redisOn(port, dir.path)
  await waitFor('readiness to come back', async () => a.agent.readiness().ready)
  const queued = await waitFor('the signal read during the outage', async () => {
    const q = await a.store.outbox('signals').peek<Signal>(10)
    return q.length === 1 && q
  })
  assert.equal(queued[0]!.payload.connections, 3)
  assert.equal(await a.store.redis.get(a.store.keys.schema), '1', 'schema version set again')
})
