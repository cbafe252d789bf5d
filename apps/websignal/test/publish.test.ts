/**
 * The wire: three instances on one namespace, one real edgegate. Exactly one publisher;
 * killing the owner mid-publish loses nothing and duplicates only as the same event id;
 * a stale epoch is refused by edgegate.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { copyFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { after, before, test } from 'node:test'
import { createLogger, type Signal } from '@gatehouse/kit'
import { metric, startRedis, type Redis as TestRedis, tempDir } from '@gatehouse/testkit'
import { PublishError, SignalClient } from '../src/publish/client.ts'
import { HEARTBEAT_MS, Publisher } from '../src/publish/publisher.ts'
import { startEdgegate, type TestEdgegate } from './edgegate.ts'
import { line, type TestAgent, testAgent, waitFor } from './helpers.ts'

let redis: TestRedis
let eg: TestEdgegate
const NODE = 'websignal-1'
before(async () => {
  redis = await startRedis()
  eg = await startEdgegate(NODE)
})
after(async () => {
  await eg?.stop()
  await redis?.stop()
})

const T0 = Date.UTC(2026, 10, 25, 9, 0, 0)

function cpConfig(namespace: string, secrets: string, agentId: string) {
  const tokenFile = join(secrets, 'token')
  writeFileSync(tokenFile, `${eg.nodeToken}\n`)
  return {
    agent_id: agentId,
    store: { url: redis.url, namespace, command_timeout: '1s' },
    control_plane: {
      url: eg.base,
      instance_id: NODE,
      token_file: tokenFile,
      ca: eg.ca.caPath,
      lease_ttl: '1s',
      publish_interval: '100ms',
    },
  }
}

/** A publisher whose process "dies" right after its request left: the batch is sent, never acknowledged. */
class DyingClient extends SignalClient {
  override async send(signals: Signal[], epoch: number): ReturnType<SignalClient['send']> {
    await super.send(signals, epoch)
    throw new Error('killed after the request left')
  }
}

test('three instances: one publisher, owner killed mid-publish, no loss, duplicates only by id, stale epoch refused', async () => {
  const secrets = tempDir('websignal-secrets-')
  after(() => secrets.remove())
  const ns = `pub${process.pid}`
  const agents: TestAgent[] = []
  for (const id of ['a', 'b', 'c']) {
    const a = await testAgent(redis.url, cpConfig(ns, secrets.path, id))
    agents.push(a)
    after(() => a.close())
  }
  const [a, b, c] = agents as [TestAgent, TestAgent, TestAgent]
  // Each instance reads its own host's log; scanners on each.
  const expected: string[] = []
  for (const [i, ag] of agents.entries()) {
    for (let k = 0; k < 4; k++) ag.append(line(`203.0.113.${10 + i * 4 + k}`, '/.env', 404, T0).repeat(3))
    await ag.tick()
  }
  const queued = await a.store.outbox('signals').peek<Signal>(100)
  assert.equal(queued.length, 12)
  expected.push(...queued.map((q) => q.id))

  // a takes the lease first: its first batch of 5 reaches edgegate, then its process dies
  // before the acknowledgement (and without releasing the lease).
  const dying = new Publisher({
    store: a.store,
    client: new DyingClient(a.config.controlPlane!),
    cp: { ...a.config.controlPlane!, batchSize: 5 },
    owner: 'a',
    metrics: { owner: () => {}, leaseFailure: () => {}, publishFailure: () => {}, published: () => {} },
  })
  await dying.round()
  const deadEpoch = dying.epoch
  assert.ok(deadEpoch > 0)
  assert.equal((await eg.eventIds()).length, 5)
  assert.equal(await a.store.outbox('signals').depth(), 12, 'not acknowledged: still queued')
  const others = [b.agent.publisher!, c.agent.publisher!]
  // While a's lease lasts nobody else publishes.
  await Promise.all(others.map((p) => p.round()))
  assert.deepEqual(
    others.map((p) => p.epoch),
    [0, 0],
  )
  // After its TTL one of b and c takes over and drains the outbox, resending a's batch.
  await waitFor('a new publisher', async () => {
    await Promise.all(others.map((p) => p.round()))
    return others.filter((p) => p.epoch > 0).length === 1
  })
  const owner = others.find((p) => p.epoch > 0)!
  assert.ok(owner.epoch > deadEpoch)
  await waitFor('the outbox drained', async () => {
    await Promise.all(others.map((p) => p.round()))
    assert.ok(others.filter((p) => p.epoch > 0).length <= 1, 'never two publishers')
    return (await a.store.outbox('signals').depth()) === 0
  })
  assert.deepEqual(await eg.eventIds(), [...expected].sort(), 'every signal stored once (duplicates were the same ids)')
  // The owner read edgegate's clock (this machine's) from its answers.
  const ownerAgent = [b, c].find((x) => x.agent.publisher === owner)!
  const offset = (await ownerAgent.metrics.clockOffset.get()).values[0]?.value
  assert.ok(offset !== undefined && Math.abs(offset) < 2, `clock offset ${offset} s`)

  // a comes back from its pause with its old epoch: edgegate refuses it.
  const stale = await eg.post({ instance_id: NODE, signals: [], epoch: deadEpoch })
  assert.equal(stale.status, 409)
  assert.equal(stale.body.error?.code, 'stale_publisher_epoch')
  const noEpoch = await eg.post({ instance_id: NODE, signals: [] })
  assert.equal(noEpoch.status, 409, 'a batch without an epoch after epochs were seen is refused')
  const current = await eg.post({ instance_id: NODE, signals: [], epoch: owner.epoch })
  assert.equal(current.status, 200)

  // The refused publisher gives up its lease view and says so in its metrics.
  const back = new Publisher({
    store: a.store,
    client: new SignalClient(a.config.controlPlane!),
    cp: a.config.controlPlane!,
    owner: 'a',
    metrics: { owner: () => {}, leaseFailure: () => {}, publishFailure: () => {}, published: () => {} },
  })
  await back.round()
  assert.equal(back.epoch, 0, 'the lease is held by the new owner')
})

test('shadow mode sends nothing even with a control plane configured', async () => {
  const secrets = tempDir('websignal-secrets-')
  after(() => secrets.remove())
  const before = await eg.eventIds()
  const s = await testAgent(redis.url, { ...cpConfig(`shadow${process.pid}`, secrets.path, 's'), shadow: true })
  after(() => s.close())
  assert.equal(s.agent.publisher, undefined)
  s.append(line('203.0.113.200', '/.env', 404, T0).repeat(5))
  await s.tick()
  assert.equal(await s.store.outbox('signals').depth(), 0)
  assert.deepEqual(await eg.eventIds(), before)
})

test('a client certificate for the control plane: its expiry is a metric, followed across a reload', async () => {
  const dir = tempDir('websignal-mtls-')
  after(() => dir.remove())
  const first = eg.ca.issueClient(NODE, { days: 3 })
  const cert = join(dir.path, 'client.crt')
  const key = join(dir.path, 'client.key')
  copyFileSync(first.certPath, cert)
  copyFileSync(first.keyPath, key)
  const a = await testAgent(redis.url, {
    agent_id: 'mtls',
    store: { url: redis.url, namespace: `mtls${process.pid}`, command_timeout: '1s' },
    control_plane: { url: eg.base, instance_id: NODE, client_cert: cert, client_key: key, ca: eg.ca.caPath },
  })
  after(() => a.close())
  const expiry = async () =>
    metric(await a.metrics.registry.registry.metrics(), 'websignal_tls_certificate_expiry_timestamp_seconds', {
      use: 'client',
    })
  const seconds = (pem: Buffer) => Math.floor(new X509Certificate(pem).validToDate.getTime() / 1000)
  assert.equal(await expiry(), seconds(first.cert))
  const renewed = eg.ca.issueClient(NODE)
  copyFileSync(renewed.certPath, cert)
  copyFileSync(renewed.keyPath, key)
  assert.equal(a.agent.reloadCredentials(), true)
  assert.equal(await expiry(), seconds(renewed.cert))
})

test('a lease holder with nothing to send sends an empty batch every 2 minutes, so the control plane hears from it', async () => {
  const secrets = tempDir('websignal-secrets-')
  after(() => secrets.remove())
  const a = await testAgent(redis.url, cpConfig(`beat${process.pid}`, secrets.path, 'beat'))
  after(() => a.close())
  const sent: Array<{ signals: number; result: unknown }> = []
  class Recording extends SignalClient {
    override async send(signals: Signal[], epoch: number): ReturnType<SignalClient['send']> {
      const result = await super.send(signals, epoch)
      sent.push({ signals: signals.length, result })
      return result
    }
  }
  let now = Date.now()
  const publisher = new Publisher({
    store: a.store,
    client: new Recording(a.config.controlPlane!),
    cp: a.config.controlPlane!,
    owner: 'beat',
    metrics: { owner: () => {}, leaseFailure: () => {}, publishFailure: () => {}, published: () => {} },
    now: () => now,
  })
  await publisher.round()
  assert.ok(publisher.epoch > 0, 'holds the lease')
  now += HEARTBEAT_MS - 1000
  await publisher.round()
  assert.deepEqual(sent, [], 'nothing to send, and not yet time')
  now += 2000
  await publisher.round()
  assert.deepEqual(sent, [{ signals: 0, result: { accepted: 0, duplicates: 0 } }], 'an empty batch, taken by edgegate')
  await publisher.round()
  assert.equal(sent.length, 1, 'the next one in 2 minutes')
  await publisher.stop()
})

test('two agents given one agent_id: one holds the lease; a restarted agent does not reuse its old lease', async () => {
  const secrets = tempDir('websignal-secrets-')
  after(() => secrets.remove())
  const ns = `twin${process.pid}`
  const first = await testAgent(redis.url, cpConfig(ns, secrets.path, 'twin'))
  after(() => first.close())
  const second = await testAgent(redis.url, cpConfig(ns, secrets.path, 'twin'))
  after(() => second.close())
  const [p1, p2] = [first.agent.publisher!, second.agent.publisher!]
  await p1.round()
  await p2.round()
  // Before, the owner was the agent_id alone: both held the lease with the same epoch.
  assert.ok(p1.epoch > 0)
  assert.equal(p2.epoch, 0, 'the second agent with the same agent_id does not hold the lease')
  const held = await first.store.leaseOwner()
  assert.match(held?.owner ?? '', /^twin\/[0-9a-f]{12}$/)
  // The first "crashes" (its lease is left behind); a restart under the same agent_id waits for
  // the lease to expire and then fences it off with a new epoch.
  const oldEpoch = p1.epoch
  const restarted = await testAgent(redis.url, cpConfig(ns, secrets.path, 'twin'))
  after(() => restarted.close())
  const p3 = restarted.agent.publisher!
  await p3.round()
  assert.equal(p3.epoch, 0, 'the old process still holds it')
  await waitFor('the old lease to expire', async () => {
    await p3.round()
    return p3.epoch > 0
  })
  assert.ok(p3.epoch > oldEpoch, `epoch ${p3.epoch} after a restart must exceed ${oldEpoch}`)
})

test('a refused token: one warning naming the fix, the cause in /readyz for status, and a recovery line', async () => {
  const secrets = tempDir('websignal-secrets-')
  after(() => secrets.remove())
  const lines: Array<Record<string, unknown>> = []
  const sink = new PassThrough().on('data', (chunk: Buffer) => {
    for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l))
  })
  const config = cpConfig(`badtoken${process.pid}`, secrets.path, 'bad')
  writeFileSync(config.control_plane.token_file, 'egn_not-a-real-token\n')
  const a = await testAgent(
    redis.url,
    config,
    undefined,
    undefined,
    createLogger({ name: 'websignal', level: 'info', destination: sink }),
  )
  after(() => a.close())
  const p = a.agent.publisher!
  a.append(line('203.0.113.77', '/.env', 404, T0).repeat(3))
  await a.tick()
  await p.round()
  assert.ok(p.epoch > 0)
  assert.match(p.failing?.cause ?? '', /^the control plane refused this node's credentials \(401 /)
  assert.match(p.failing?.cause ?? '', /edgegate node rotate-token websignal-1/)
  // Not a readiness check (the signal waits in the outbox), but said with it, for `status`.
  assert.equal(a.agent.readiness().publishing?.cause, p.failing?.cause)
  await waitFor('the warning logged', () =>
    lines.some((l) => l.msg?.toString().startsWith('signals cannot be published')),
  )
  const warned = lines.filter((l) => l.msg?.toString().startsWith('signals cannot be published'))
  assert.equal(warned.length, 1)
  assert.equal(warned[0]!.level, 'warn')
  // Once batches go again (here: a client that fails once more, then sends), one line says so.
  let failOnce = true
  class Recovering extends SignalClient {
    override async send(signals: Signal[], epoch: number): ReturnType<SignalClient['send']> {
      if (failOnce) {
        failOnce = false
        throw new PublishError('network', 'https://cp.example: connect ECONNREFUSED')
      }
      return super.send(signals, epoch)
    }
  }
  const cp = a.config.controlPlane!
  const good = { ...cp, auth: { kind: 'token' as const, token: eg.nodeToken, ca: eg.ca.caPath } }
  let now = Date.now()
  const again = new Publisher({
    store: a.store,
    client: new Recovering(good),
    cp: a.config.controlPlane!,
    owner: 'recovering',
    metrics: { owner: () => {}, leaseFailure: () => {}, publishFailure: () => {}, published: () => {} },
    logger: createLogger({ name: 'websignal', level: 'info', destination: sink }),
    now: () => now,
  })
  await p.stop()
  await again.round()
  assert.match(again.failing?.cause ?? '', /ECONNREFUSED/)
  now += 1500
  await again.round()
  assert.equal(again.failing, undefined)
  await waitFor('the recovery logged', () => lines.some((l) => l.msg === 'signals are published again'))
  assert.equal(await a.store.outbox('signals').depth(), 0)
  await again.stop()
})

test('an unreachable control plane is named by its address', async () => {
  const secrets = tempDir('websignal-secrets-')
  after(() => secrets.remove())
  const config = cpConfig(`noaddr${process.pid}`, secrets.path, 'gone')
  const dead = 'https://127.0.0.1:9'
  const a = await testAgent(redis.url, { ...config, control_plane: { ...config.control_plane, url: dead } })
  after(() => a.close())
  const p = a.agent.publisher!
  a.append(line('203.0.113.78', '/.env', 404, T0).repeat(3))
  await a.tick()
  await p.round()
  assert.match(p.failing?.cause ?? '', /^https:\/\/127\.0\.0\.1:9: connect ECONNREFUSED/)
})
