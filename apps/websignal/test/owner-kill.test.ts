/**
 * Two `websignal serve` processes on one namespace and a real edgegate: the publisher is
 * killed with SIGKILL after its batch reached edgegate and before the answer reached it (a
 * TCP relay in between holds edgegate's answers). The other process takes the lease when it
 * expires and drains the shared outbox: every signal is stored once, resent ones only under
 * their own event id, and nothing is lost.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { type Child, freePort, startChild, startRedis, type Redis as TestRedis, tempDir } from '@gatehouse/testkit'
import { startEdgegate, type TestEdgegate } from './edgegate.ts'
import { line, MAIN, metric, waitFor, writeConfig } from './helpers.ts'

let redis: TestRedis
let eg: TestEdgegate
const NODE = 'websignal-kill'
before(async () => {
  redis = await startRedis()
  eg = await startEdgegate(NODE)
})
after(async () => {
  await eg?.stop()
  await redis?.stop()
})

/**
 * A TCP relay to edgegate (TLS passes through untouched) that can hold edgegate's answers on
 * the connections open at that moment: their handshakes are done, so what comes back is the
 * answer to a request.
 */
async function startRelay(target: URL) {
  const pairs = new Set<{ client: Socket; upstream: Socket; holding: boolean; held: Buffer[] }>()
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    const pair = { client, upstream, holding: false, held: [] as Buffer[] }
    pairs.add(pair)
    client.pipe(upstream)
    upstream.on('data', (chunk: Buffer) => {
      if (pair.holding) pair.held.push(chunk)
      else client.write(chunk)
    })
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    /** Hold the answers on the open connections (on), or drop what was held and stop (off). */
    hold(on: boolean) {
      for (const p of pairs) p.holding = on
      if (!on) for (const p of pairs) p.held.length = 0
    },
    /** Bytes of edgegate's answers held back so far. */
    heldBytes: () => [...pairs].reduce((n, p) => n + p.held.reduce((m, b) => m + b.length, 0), 0),
    close() {
      for (const p of pairs) {
        p.client.destroy()
        p.upstream.destroy()
      }
      server.close()
    },
  }
}

test('SIGKILL of the publishing process mid-publish: the other process takes over, nothing lost, no new ids', async () => {
  const dir = tempDir('websignal-kill-')
  after(() => dir.remove())
  const relay = await startRelay(new URL(eg.base))
  after(() => relay.close())
  const tokenFile = join(dir.path, 'token')
  writeFileSync(tokenFile, `${eg.nodeToken}\n`, { mode: 0o600 })

  const start = async (id: string) => {
    const log = join(dir.path, `${id}.log`)
    writeFileSync(log, '')
    const port = await freePort()
    const c = writeConfig({
      agent_id: id,
      listen: `127.0.0.1:${port}`,
      inputs: [{ path: log, format: 'combined', site: 'main', host: 'www.example.org' }],
      store: { url: redis.url, namespace: `kill${process.pid}` },
      window: '1h',
      poll_interval: '50ms',
      flush_interval: '100ms',
      log_level: 'warn',
      control_plane: {
        url: relay.url,
        instance_id: NODE,
        token_file: tokenFile,
        ca: eg.ca.caPath,
        lease_ttl: '1s',
        publish_interval: '100ms',
      },
    })
    after(() => c.dir.remove())
    const child: Child = await startChild({
      name: `websignal-${id}`,
      command: process.execPath,
      args: [MAIN, 'serve', '--config', c.path],
      logFile: join(c.dir.path, 'websignal.log'),
      probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
      timeoutMs: 30_000,
    })
    after(() => child.stop())
    return { id, log, port, child }
  }
  const a = await start('a')
  const b = await start('b')
  const procs = [a, b]
  const owner = await waitFor('one publisher', async () => {
    const owners = []
    for (const p of procs) if ((await metric(p.port, 'websignal_publisher_owner')) === 1) owners.push(p)
    return owners.length === 1 && owners[0]
  })
  const survivor = owner === a ? b : a
  const t = Date.now() - 30_000
  const scanners = (from: number, n: number) => {
    let text = ''
    for (let k = from; k < from + n; k++) text += line(`203.0.113.${k}`, '/.env', 404, t).repeat(3)
    return text
  }

  // A first batch goes through and leaves the owner a kept-alive connection through the relay.
  writeFileSync(owner.log, scanners(10, 2), { flag: 'a' })
  await waitFor('the first batch stored', async () => (await eg.eventIds()).length === 2)
  // Hold edgegate's answers on that connection, then give the owner a burst of scanners.
  relay.hold(true)
  writeFileSync(owner.log, scanners(20, 6), { flag: 'a' })
  const stored = await waitFor('the burst stored by edgegate, its answer held', async () => {
    const ids = await eg.eventIds()
    return ids.length > 2 && relay.heldBytes() > 0 && ids
  })
  owner.child.process.kill('SIGKILL')
  await new Promise((r) => owner.child.process.once('exit', r))
  relay.hold(false)

  // The survivor's own scanners go into the same outbox.
  writeFileSync(survivor.log, line('198.51.100.7', '/.git/config', 404, t).repeat(3), { flag: 'a' })
  await waitFor(
    'the survivor publishes',
    async () => (await metric(survivor.port, 'websignal_publisher_owner')) === 1,
    15_000,
  )
  const ids = await waitFor(
    'every signal stored',
    async () => {
      const depth = await metric(survivor.port, 'websignal_signal_outbox_depth')
      const all = await eg.eventIds()
      return depth === 0 && all.length >= 9 && all
    },
    15_000,
  )
  assert.equal(new Set(ids).size, ids.length, 'each event id stored once')
  for (const id of stored) assert.ok(ids.includes(id), 'the batch the dead owner sent is still there')
  assert.equal(ids.length, 9, 'eight scanners from the dead owner, one from the survivor')
})
