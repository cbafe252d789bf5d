/**
 * Redis Sentinel failover through ioredis: a master, a replica and one sentinel (Debian
 * redis-sentinel). After the master dies the agent follows the promoted replica, and a new
 * lease acquisition still gets a higher fencing epoch.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { type Child, freePort, requireBinary, startChild, tempDir } from '@gatehouse/testkit'
import { Redis } from 'ioredis'
import { Store } from '../src/store/store.ts'
import { waitFor } from './helpers.ts'

function redisServer(port: number, dir: string, name: string, extra: string[] = []): Promise<Child> {
  return startChild({
    name,
    command: '/usr/bin/redis-server',
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra],
    logFile: join(dir, `${name}.log`),
    readyLine: /Ready to accept connections/,
  })
}

test('sentinel failover: the store follows the new master and the epoch still rises', async () => {
  const sentinelBin = requireBinary('/usr/bin/redis-sentinel', 'redis-sentinel')
  const dir = tempDir('websignal-sentinel-')
  after(() => dir.remove())
  const [mp, rp, sp] = [await freePort(), await freePort(), await freePort()]
  const master = await redisServer(mp, dir.path, 'master')
  after(() => master.stop())
  const replica = await redisServer(rp, dir.path, 'replica', ['--replicaof', '127.0.0.1', String(mp)])
  after(() => replica.stop())
  const conf = join(dir.path, 'sentinel.conf')
  writeFileSync(
    conf,
    [
      `port ${sp}`,
      'bind 127.0.0.1',
      `dir ${dir.path}`,
      `sentinel monitor ws 127.0.0.1 ${mp} 1`,
      'sentinel down-after-milliseconds ws 500',
      'sentinel failover-timeout ws 3000',
      'sentinel parallel-syncs ws 1',
      '',
    ].join('\n'),
  )
  const sentinel = await startChild({
    name: 'redis-sentinel',
    command: sentinelBin,
    args: [conf],
    logFile: join(dir.path, 'sentinel.log'),
    readyLine: /Sentinel ID is|monitor master/,
  })
  after(() => sentinel.stop())
  const store = new Store({
    url: 'redis://unused',
    sentinels: { hosts: [`127.0.0.1:${sp}`], name: 'ws' },
    namespace: 'sentinel',
    commandTimeoutMs: 500,
  })
  after(() => store.close())
  await store.open()
  const e1 = await store.acquire('a', 1000)
  assert.ok(e1 > 0)
  // Wait until the replica has the epoch, then kill the master.
  const rep = new Redis(rp)
  after(() => rep.disconnect())
  await waitFor('replication', async () => (await rep.get(store.keys.epoch)) === String(e1))
  await master.stop()
  await waitFor('failover to the replica', async () => (await rep.info('replication')).includes('role:master'), 60_000)
  const e2 = await waitFor(
    'a new lease through the new master',
    async () => {
      try {
        return await store.acquire('b', 1000)
      } catch {
        return 0
      }
    },
    60_000,
  )
  assert.ok(e2 > e1, `epoch ${e2} after failover must exceed ${e1}`)
  assert.equal((await store.leaseOwner())?.owner, 'b')
})
