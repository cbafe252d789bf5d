/**
 * `npm start`'s edgegate (stack.ts) registers both demo gates: `sshgate-1` and `tlsgate-1`, their
 * tokens kept in credentials.json. A data folder kept from a stack older than the TLS gate's node
 * (credentials.json without it) gets it on the next start, also when someone had registered
 * `tlsgate-1` by hand, as the old start-up hint said (its token is shown once: a new one).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import type { StackContext, StackService } from '../../../packages/kit/src/stack.ts'
import { startStack } from '../stack.ts'

const root = join(import.meta.dirname, '..', '..', '..')
// Below the ephemeral range (other tests bind port 0 there) and off the demo's own ports.
const OFFSET = 12_050 + Math.floor(Math.random() * 100) * 100
const home = mkdtempSync(join(tmpdir(), 'edgegate-stack-'))
const dataDir = join(home, 'edgegate')
const said: string[] = []
let running: StackService | undefined

after(async () => {
  await running?.stop()
  rmSync(home, { recursive: true, force: true })
})

const ctx = (): StackContext => ({
  root,
  dataDir,
  node: process.execPath,
  log: (line) => said.push(line),
  started: {},
  port: (base) => base + OFFSET,
})

interface Kept {
  adminToken: string
  nodeId: string
  nodeToken: string
  tlsgateId?: string
  tlsgateToken?: string
}
const kept = () => JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as Kept

/** GET /v1/policy as a node: 200 when the token is the node's. */
function pull(instance: string, token: string): number {
  const r = spawnSync(
    'curl',
    [
      '--silent',
      '--output',
      '/dev/null',
      '-w',
      '%{http_code}',
      '--cacert',
      join(dataDir, 'tls', 'ca.crt'),
      '-H',
      `Authorization: Bearer ${token}`,
      `https://127.0.0.1:${OFFSET + 8443}/v1/policy?instance_id=${instance}`,
    ],
    { encoding: 'utf8' },
  )
  return Number(r.stdout)
}

function edgegateCli(args: string[]) {
  return spawnSync(process.execPath, [join(root, 'apps', 'edgegate', 'src', 'main.ts'), ...args], {
    env: { ...process.env, EDGEGATE_CONFIG: join(dataDir, 'config.json') },
    encoding: 'utf8',
  })
}

test('both demo gates are registered, their tokens printed and kept; a kept folder without the TLS gate gets it', async () => {
  running = await startStack(ctx())
  const first = kept()
  assert.equal(first.nodeId, 'sshgate-1')
  assert.equal(first.tlsgateId, 'tlsgate-1')
  assert.equal(running.credentials?.['node tlsgate-1 (tlsgate) token'], first.tlsgateToken)
  assert.equal(pull('tlsgate-1', first.tlsgateToken!), 200)
  assert.equal(pull('sshgate-1', first.nodeToken), 200)
  assert.equal(statSync(join(dataDir, 'config.json')).mode & 0o077, 0, 'config.json is owner-only')
  const nodes = edgegateCli(['node', 'list'])
  assert.equal(nodes.status, 0, nodes.stderr)
  assert.match(nodes.stdout, /^sshgate-1\s+sshgate\s/m)
  assert.match(nodes.stdout, /^tlsgate-1\s+tlsgate\s/m)

  // A folder kept from before: the node registered by hand as the old hint said, its token not kept.
  await running.stop()
  running = undefined
  const { tlsgateId: _id, tlsgateToken: _token, ...older } = first
  writeFileSync(join(dataDir, 'credentials.json'), `${JSON.stringify(older, null, 2)}\n`)
  running = await startStack(ctx())
  const again = kept()
  assert.equal(again.adminToken, first.adminToken, 'the rest is kept')
  assert.equal(again.nodeToken, first.nodeToken)
  assert.equal(again.tlsgateId, 'tlsgate-1')
  assert.notEqual(again.tlsgateToken, first.tlsgateToken, 'a new token: the old one was shown once')
  assert.equal(pull('tlsgate-1', again.tlsgateToken!), 200)
  assert.equal(pull('tlsgate-1', first.tlsgateToken!), 401)
  assert.ok(said.includes('registered the TLS gate as node tlsgate-1 (kind tlsgate)'), said.join('\n'))

  // A restart with everything kept changes nothing, but tightens a config file a stack from
  // before left readable by everyone (serve run by hand warned about it).
  await running.stop()
  chmodSync(join(dataDir, 'config.json'), 0o644)
  running = await startStack(ctx())
  assert.deepEqual(kept(), again)
  assert.equal(statSync(join(dataDir, 'config.json')).mode & 0o077, 0, 'config.json is owner-only')

  // sshgate-1 re-keyed by hand (as sshproxy's README describes), its new token not kept: the
  // next start gives it one it keeps, instead of a gate failing every sync with 401 for good.
  await running.stop()
  running = undefined
  const byHand = edgegateCli(['node', 'rotate-token', 'sshgate-1'])
  assert.equal(byHand.status, 0, byHand.stderr)
  const handToken = /token: (\S+)/.exec(byHand.stdout)![1]!
  said.length = 0
  running = await startStack(ctx())
  const rekeyed = kept()
  assert.notEqual(rekeyed.nodeToken, again.nodeToken)
  assert.notEqual(rekeyed.nodeToken, handToken)
  assert.equal(pull('sshgate-1', rekeyed.nodeToken), 200)
  assert.equal(running.credentials?.['node sshgate-1 (sshgate) token'], rekeyed.nodeToken, 'printed for the gate')
  assert.equal(rekeyed.tlsgateToken, again.tlsgateToken, 'a token that works is kept')
  assert.ok(
    said.includes(
      'the kept token of node sshgate-1 no longer worked (rotated by hand?): it has a new one, kept for its gate',
    ),
    said.join('\n'),
  )
})

test('a tlsgate-1 registered by hand with another kind keeps its token: the stack says why the TLS gate will not sync', async () => {
  await running?.stop()
  running = undefined
  rmSync(dataDir, { recursive: true, force: true })
  // A folder from before the TLS gate synced, where tlsgate-1 was added by hand as an sshgate.
  const byCli = (args: string[]) => {
    const r = spawnSync(process.execPath, [join(root, 'apps', 'edgegate', 'src', 'main.ts'), ...args], {
      env: { ...process.env, EDGEGATE_DATABASE: `sqlite:${join(dataDir, 'edgegate.db')}` },
      encoding: 'utf8',
    })
    assert.equal(r.status, 0, r.stderr)
    return /token: (\S+)/.exec(r.stdout)?.[1] ?? ''
  }
  mkdirSync(dataDir, { recursive: true })
  byCli(['migrate'])
  const older = {
    adminToken: byCli(['admin', 'add', 'admin']),
    nodeId: 'sshgate-1',
    nodeToken: byCli(['node', 'add', '--kind', 'sshgate', 'sshgate-1']),
  }
  writeFileSync(join(dataDir, 'credentials.json'), `${JSON.stringify(older, null, 2)}\n`)
  const handToken = byCli(['node', 'add', '--kind', 'sshgate', 'tlsgate-1'])
  said.length = 0

  running = await startStack(ctx())
  assert.equal(kept().tlsgateToken, undefined, 'no token kept that would only get 403 wrong_node_kind')
  assert.equal(running.credentials?.['node tlsgate-1 (tlsgate) token'], undefined)
  const line = said.find((l) => l.startsWith('could not register tlsgate-1'))
  assert.ok(line, said.join('\n'))
  assert.match(line, /node tlsgate-1 is registered as kind sshgate, not tlsgate: its token was not rotated/)
  assert.match(line, /bin\/edgegate node show tlsgate-1/)
  assert.equal(pull('tlsgate-1', handToken), 200, 'the token given by hand still works: nothing was rotated')
  const audit = edgegateCli(['audit', 'list', '--action', 'node.rotate_token', '--json'])
  assert.equal(audit.status, 0, audit.stderr)
  assert.deepEqual(JSON.parse(audit.stdout), [])
})
