/**
 * A rotated control-plane token taken without a restart, against a real edgegate: after
 * `edgegate node rotate-token`, batches are refused (401); the new token put in the token file
 * is taken on SIGHUP, or at the next refused batch without any signal; a token that cannot be
 * read keeps the previous one and says why. Publishing then resumes and says so.
 */
import assert from 'node:assert/strict'
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { after, before, test } from 'node:test'
import { createLogger } from '@gatehouse/kit'
import { freePort, startChild, startRedis, type Redis as TestRedis, tempDir } from '@gatehouse/testkit'
import { loadWebsignalConfig } from '../src/config.ts'
import { PublishError, SignalClient } from '../src/publish/client.ts'
import { CredentialReload } from '../src/publish/credentials.ts'
import { publishFailureCause } from '../src/publish/publisher.ts'
import { startEdgegate, type TestEdgegate } from './edgegate.ts'
import { line, MAIN, testAgent, waitFor, writeConfig } from './helpers.ts'

let redis: TestRedis
let eg: TestEdgegate
before(async () => {
  redis = await startRedis()
  eg = await startEdgegate('websignal-base')
})
after(async () => {
  await eg?.stop()
  await redis?.stop()
})

const T0 = Date.UTC(2026, 10, 25, 9, 0, 0)
const scanner = (ip: string) => line(ip, '/.env', 404, T0).repeat(3)

/** A node of the test's own on the shared edgegate, its token in a 0600 file. */
function node(id: string) {
  const dir = tempDir('websignal-token-')
  after(() => dir.remove())
  const tokenFile = join(dir.path, 'token')
  writeFileSync(tokenFile, `${eg.addNode(id)}\n`, { mode: 0o600 })
  const controlPlane = { url: eg.base, instance_id: id, token_file: tokenFile, ca: eg.ca.caPath, lease_ttl: '2s' }
  return { tokenFile, controlPlane }
}

/** JSON log lines written to memory. */
function memoryLogger() {
  const lines: Array<Record<string, unknown>> = []
  const sink = new PassThrough().on('data', (chunk: Buffer) => {
    for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l))
  })
  return { lines, logger: createLogger({ name: 'websignal', level: 'info', destination: sink }) }
}

const has = (lines: Array<Record<string, unknown>>, msg: string) => lines.filter((l) => String(l.msg).startsWith(msg))

test('SIGHUP reload: an unreadable token keeps the old one and says why; the rotated one is taken and publishing resumes', async () => {
  const id = 'websignal-hup'
  const { tokenFile, controlPlane } = node(id)
  const { lines, logger } = memoryLogger()
  const a = await testAgent(
    redis.url,
    { store: { url: redis.url, namespace: `hup${process.pid}` }, control_plane: controlPlane },
    undefined,
    undefined,
    logger,
  )
  after(() => a.close())
  const p = a.agent.publisher!
  a.append(scanner('203.0.113.10'))
  await a.tick()
  await p.round()
  assert.equal(p.failing, undefined, 'published with the first token')
  assert.equal(await a.store.outbox('signals').depth(), 0)

  const rotated = eg.rotateToken(id)
  a.append(scanner('203.0.113.11'))
  await a.tick()
  await p.round()
  // As `websignal status` reads it.
  assert.match(a.agent.readiness().publishing?.cause ?? '', /^the control plane refused this node's credentials \(401 /)
  await waitFor('the refusal logged', () => has(lines, 'signals cannot be published').length === 1)

  // The token file cannot be read (here: a directory in its place): the old token stays.
  rmSync(tokenFile)
  mkdirSync(tokenFile)
  assert.equal(a.agent.reloadCredentials(), false)
  const refused = await waitFor('the failed reload logged', () =>
    has(lines, 'control-plane credentials not reloaded; the previous ones stay in use').at(0),
  )
  assert.equal(refused.level, 'error')
  assert.match(
    String(refused.reason),
    new RegExp(`control_plane\\.token_file: secret file ${tokenFile} cannot be read \\(EISDIR\\)`),
  )
  // Not a word of the token in the log.
  assert.ok(!JSON.stringify(lines).includes(rotated))

  // A file holding more than a token is refused too, without echoing it.
  rmSync(tokenFile, { recursive: true })
  writeFileSync(tokenFile, `${rotated}\nsecond line\n`, { mode: 0o600 })
  assert.equal(a.agent.reloadCredentials(), false)
  await waitFor('the second failed reload', () => has(lines, 'control-plane credentials not reloaded').length === 2)
  assert.match(String(has(lines, 'control-plane credentials not reloaded')[1]!.reason), /a line break/)
  assert.ok(!JSON.stringify(lines).includes(rotated))

  writeFileSync(tokenFile, `${rotated}\n`, { mode: 0o600 })
  assert.equal(a.agent.reloadCredentials(), true)
  const reloaded = await waitFor('the reload logged', () =>
    has(lines, 'control-plane token reloaded: the next batches carry the new one').at(0),
  )
  assert.equal(reloaded.token_from, tokenFile)
  // The next round sends at once (no backoff left from the refusals) and the signal arrives.
  await p.round()
  assert.equal(p.failing, undefined)
  assert.equal(await a.store.outbox('signals').depth(), 0)
  assert.equal(a.agent.readiness().publishing, undefined)
  await waitFor('the recovery logged', () => has(lines, 'signals are published again').length === 1)
  // A second SIGHUP with the same file: said to be unchanged.
  assert.equal(a.agent.reloadCredentials(), true)
  await waitFor('unchanged said', () => has(lines, 'control-plane credentials reloaded; the token is unchanged').length)
})

test('without any signal: the token file is read again after a refused batch', async () => {
  const id = 'websignal-auto'
  const { tokenFile, controlPlane } = node(id)
  const { lines, logger } = memoryLogger()
  const a = await testAgent(
    redis.url,
    { store: { url: redis.url, namespace: `auto${process.pid}` }, control_plane: controlPlane },
    undefined,
    undefined,
    logger,
  )
  after(() => a.close())
  const p = a.agent.publisher!
  const before = (await eg.eventIds()).length
  writeFileSync(tokenFile, `${eg.rotateToken(id)}\n`)
  a.append(scanner('203.0.113.20'))
  await a.tick()
  await p.round()
  // Refused with the old token; the refusal read the file again and the next round carries the new one.
  assert.match(p.failing?.cause ?? '', /\(401 /)
  assert.equal(has(lines, 'control-plane token reloaded after the control plane refused the previous one').length, 1)
  await p.round()
  assert.equal(p.failing, undefined)
  assert.equal((await eg.eventIds()).length, before + 1)
  await waitFor('the recovery logged', () => has(lines, 'signals are published again').length === 1)
})

test('websignal serve: rotate-token, 401, kill -HUP with the new token in place, publishing again', async () => {
  const id = 'websignal-serve'
  const { tokenFile, controlPlane } = node(id)
  const logDir = tempDir('websignal-serve-log-')
  after(() => logDir.remove())
  const accessLog = join(logDir.path, 'access.log')
  writeFileSync(accessLog, '')
  const port = await freePort()
  const c = writeConfig({
    listen: `127.0.0.1:${port}`,
    inputs: [{ path: accessLog, format: 'combined', site: 'main', host: 'www.example.org' }],
    store: { url: redis.url, namespace: `serve${process.pid}` },
    window: '1h',
    poll_interval: '50ms',
    flush_interval: '100ms',
    control_plane: { ...controlPlane, publish_interval: '100ms' },
  })
  after(() => c.dir.remove())
  const out = join(c.dir.path, 'websignal.log')
  const child = await startChild({
    name: 'websignal',
    command: process.execPath,
    args: [MAIN, 'serve', '--config', c.path],
    logFile: out,
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
    timeoutMs: 30_000,
  })
  after(() => child.stop())
  const log = () =>
    readFileSync(out, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  const before = (await eg.eventIds()).length
  appendFileSync(accessLog, scanner('203.0.113.30'))
  await waitFor('the first signal at edgegate', async () => (await eg.eventIds()).length === before + 1)

  const rotated = eg.rotateToken(id)
  appendFileSync(accessLog, scanner('203.0.113.31'))
  await waitFor('the refusal logged', () => has(log(), 'signals cannot be published').length === 1)
  const readyz = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { publishing?: { cause: string } }
  assert.match(readyz.publishing?.cause ?? '', /\(401 .*edgegate node rotate-token websignal-serve/)

  // A token file that cannot be read: SIGHUP keeps the old token and says why.
  rmSync(tokenFile)
  mkdirSync(tokenFile)
  process.kill(child.pid, 'SIGHUP')
  const notReloaded = await waitFor('the failed reload logged', () =>
    has(log(), 'control-plane credentials not reloaded').at(0),
  )
  assert.match(String(notReloaded.reason), /EISDIR/)

  // The rotated token in place, then SIGHUP: taken (by the signal, or by the next refused
  // batch if that came first), and the waiting signal goes out.
  rmSync(tokenFile, { recursive: true })
  writeFileSync(tokenFile, `${rotated}\n`, { mode: 0o600 })
  process.kill(child.pid, 'SIGHUP')
  await waitFor('publishing again', () => has(log(), 'signals are published again').length === 1)
  await waitFor('the second signal at edgegate', async () => (await eg.eventIds()).length === before + 2)
  await waitFor('the SIGHUP answered', () =>
    log().some((l) =>
      /^control-plane (token reloaded: the next batches|credentials reloaded; the token is unchanged)/.test(
        String(l.msg),
      ),
    ),
  )
  assert.equal(has(log(), 'control-plane token reloaded').length, 1, 'the new token taken once')
  const readyAgain = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { publishing?: unknown }
  assert.equal(readyAgain.publishing, undefined)
  assert.ok(!readFileSync(out, 'utf8').includes(rotated), 'the token never logged')
  await child.stop()
  assert.equal(child.process.exitCode, 0)
})

test('a token that no bearer token can be is refused at start, without echoing it', () => {
  const c = writeConfig({
    inputs: [{ path: '/var/log/nginx/access.log', format: 'combined', site: 'main' }],
    control_plane: { url: 'https://cp.example', instance_id: 'n1', token: 'egn_secret part' },
  })
  after(() => c.dir.remove())
  assert.throws(c.load, (err: Error & { lines?: string[] }) => {
    assert.deepEqual(err.lines, [
      'control_plane.token: holds a space, a line break, a control or a non-ASCII character, which no bearer token has (the file must hold the token alone, one trailing newline allowed)',
    ])
    return !err.message.includes('egn_secret')
  })
})

test('a refusal names the fix for the credential in use: a new token, or the client certificate', () => {
  const refused = new PublishError('unauthorized', 'POST /v1/signals/batch: 401 unauthorized', 401)
  const token = publishFailureCause(refused, { instanceId: 'web-1', auth: { kind: 'token', token: 'x' } })
  assert.match(token, /`edgegate node rotate-token web-1` and put it in the token file/)
  assert.doesNotMatch(token, /certificate/)
  const mtls = publishFailureCause(refused, {
    instanceId: 'web-1',
    auth: { kind: 'mtls', clientCert: '/c', clientKey: '/k', ca: '/ca' },
  })
  assert.match(mtls, /check the client certificate with `websignal doctor`/)
  assert.doesNotMatch(mtls, /rotate-token/)
})

test('a token given in $WEBSIGNAL_CONTROL_PLANE_TOKEN itself: SIGHUP says only a restart changes it; a file given by $..._FILE is read again', async () => {
  const c = writeConfig({
    inputs: [{ path: '/var/log/nginx/access.log', format: 'combined', site: 'main' }],
    control_plane: { url: eg.base, instance_id: 'websignal-env', ca: eg.ca.caPath },
  })
  after(() => c.dir.remove())
  const reload = (env: Record<string, string>) => {
    const { lines, logger } = memoryLogger()
    const cp = loadWebsignalConfig(c.path, env).controlPlane!
    const client = new SignalClient(cp)
    after(() => client.close())
    let reloaded = 0
    return {
      client,
      lines,
      r: new CredentialReload({ client, cp, logger, reloaded: () => reloaded++ }),
      reloaded: () => reloaded,
    }
  }
  const fixed = reload({ WEBSIGNAL_CONTROL_PLANE_TOKEN: 'egn_from-env' })
  assert.equal(fixed.r.sighup(), true)
  await waitFor(
    'the CA reload said',
    () =>
      has(
        fixed.lines,
        'control-plane CA reloaded; the token comes from $WEBSIGNAL_CONTROL_PLANE_TOKEN, which only a restart changes',
      ).length,
  )
  assert.equal(fixed.client.token, 'egn_from-env')
  assert.equal(fixed.r.refused(), false, 'a refusal reads nothing new either')

  const file = join(c.dir.path, 'env-token')
  writeFileSync(file, 'egn_first\n', { mode: 0o600 })
  const fromFile = reload({ WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE: file })
  writeFileSync(file, 'egn_second\n', { mode: 0o600 })
  assert.equal(fromFile.r.sighup(), true)
  const line = await waitFor('the reload said', () =>
    has(fromFile.lines, 'control-plane token reloaded: the next batches carry the new one').at(0),
  )
  assert.equal(line.token_from, file)
  assert.equal(fromFile.client.token, 'egn_second')
  assert.equal(fromFile.reloaded(), 1)
})
