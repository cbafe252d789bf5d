/**
 * `npm start`'s TLS gate beside the stack's edgegate (both apps' stack.ts, started as
 * scripts/stack.ts starts them, state in a temporary GATEHOUSE_HOME, ports shifted): the gate is
 * registered as node `tlsgate-1` and syncs with edgegate. A client through the gate reaches
 * edgegate as a fingerprint with its IP/port sighting and SNI, which a web signal for the same
 * host and address turns into a web candidate; a decision made on edgegate with the printed
 * command reaches the gate and refuses the client. The printed commands are pasted into a clean
 * shell (system node first on PATH). Without edgegate the gate starts on local verdicts only.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { stackHarness } from '@gatehouse/testkit'
import type { StackService } from '../../../packages/kit/src/stack.ts'
import { startStack as startEdgegate } from '../../edgegate/stack.ts'
import { startStack as startTlsgate } from '../stack.ts'

const stack = stackHarness('tlsgate-stack-', 0)
const { home, said, port, context, paste, command, eventually } = stack

describe('the stack: tlsgate-1 syncs with the stack edgegate', () => {
  let edgegate: StackService
  let tlsgate: StackService
  let adminToken: string
  let ca: string

  const api = (path: string, init: { method?: string; token?: string; body?: unknown } = {}) => {
    const args = ['--silent', '--show-error', '--cacert', ca, '-H', `Authorization: Bearer ${init.token ?? adminToken}`]
    if (init.method) args.push('-X', init.method)
    if (init.body) args.push('-H', 'content-type: application/json', '--data', JSON.stringify(init.body))
    const r = spawnSync('curl', [...args, '-w', '\n%{http_code}', `https://127.0.0.1:${port(8443)}${path}`], {
      encoding: 'utf8',
    })
    const lines = r.stdout.trimEnd().split('\n')
    const status = Number(lines.pop())
    return { status, body: lines.join('\n') ? JSON.parse(lines.join('\n')) : undefined }
  }

  before(async () => {
    const started: Record<string, StackService> = {}
    edgegate = await startEdgegate(context('edgegate', started))
    started.edgegate = edgegate
    tlsgate = await startTlsgate(context('tlsgate', started))
    adminToken = (
      JSON.parse(readFileSync(join(home, 'edgegate', 'credentials.json'), 'utf8')) as { adminToken: string }
    ).adminToken
    ca = join(home, 'edgegate', 'tls', 'ca.crt')
  })
  after(async () => {
    await tlsgate?.stop()
    await edgegate?.stop()
    stack.remove()
  })

  test('edgegate registers tlsgate-1 and prints its token; the gate syncs as it, and its start-up lines say so', async () => {
    assert.match(edgegate.credentials?.['node tlsgate-1 (tlsgate) token'] ?? '', /^egn_/)
    const config = JSON.parse(readFileSync(join(home, 'tlsgate', 'config.json'), 'utf8'))
    assert.equal(config.control_plane.instance_id, 'tlsgate-1')
    assert.equal(config.control_plane.url, `https://127.0.0.1:${port(8443)}`)
    assert.equal(config.control_plane.token, undefined, 'no secret in config.json')
    assert.ok(
      said.some(
        (l) =>
          l.startsWith(`[tlsgate] TLS gate 127.0.0.1:${port(8444)} -> demo nginx`) &&
          l.endsWith(`, syncing with https://127.0.0.1:${port(8443)} as tlsgate-1 every 5 s`),
      ),
      said.join('\n'),
    )
    assert.match(command(tlsgate, 'bin/edgegate decision block'), /--instance tlsgate-1 <fingerprint>$/)
    const nodes = paste('bin/edgegate node list')
    assert.equal(nodes.status, 0, nodes.stderr)
    assert.match(nodes.stdout, /^tlsgate-1\s+tlsgate\s+active/m)
    // Its first pull marks it seen.
    await eventually('tlsgate-1 heard from', 30_000, () => {
      const n = api('/api/nodes').body as { nodes: { instance_id: string; last_seen_at: string | null }[] }
      return n.nodes.find((x) => x.instance_id === 'tlsgate-1')?.last_seen_at ?? undefined
    })
    const status = paste(command(tlsgate, 'bin/tlsgate status'))
    assert.equal(status.status, 0, status.stderr)
    assert.match(status.stdout, /^control plane: https:\/\/127\.0\.0\.1:\d+ as tlsgate-1/m)
  })

  test('a client through the gate is web evidence on edgegate, and a decision made there refuses it at the gate', async () => {
    const curl = `${command(tlsgate, 'curl -k https://localhost:')} --silent --show-error --max-time 10`
    const first = paste(curl)
    assert.equal(first.status, 0, first.stderr)
    assert.match(first.stdout, /Behind the Gatehouse TLS gate/)
    // The fingerprint, its sighting and its SNI reach edgegate with the gate's next upload.
    type Fp = { fingerprint: string; metadata: Record<string, string>; sightings: { ip: string }[] }
    const fp = await eventually('the fingerprint on edgegate', 30_000, () => {
      const r = api('/api/fingerprints?instance_id=tlsgate-1')
      return (r.body as { fingerprints?: Fp[] } | undefined)?.fingerprints?.[0]
    })
    assert.equal(fp.metadata.sni, 'localhost')
    assert.ok(
      fp.sightings.some((s) => s.ip === '127.0.0.1'),
      JSON.stringify(fp),
    )
    const listed = paste(command(tlsgate, 'bin/edgegate fingerprint list'))
    assert.equal(listed.status, 0, listed.stderr)
    assert.match(listed.stdout, new RegExp(`^tlsgate-1\\s+${fp.fingerprint}\\s+none\\s+\\d+\\s+127\\.0\\.0\\.1`, 'm'))

    // A web signal node reporting a scanner at that host and address: edgegate matches it with
    // the gate's sighting, a web candidate for tlsgate-1 and this fingerprint.
    const added = paste('bin/edgegate node add --kind websignal web-test')
    assert.equal(added.status, 0, added.stderr)
    const webToken = /token: (\S+)/.exec(added.stdout)![1]!
    const signal = api('/v1/signals/batch?instance_id=web-test', {
      method: 'POST',
      token: webToken,
      body: {
        instance_id: 'web-test',
        signals: [
          {
            event_id: 'stack-test-1',
            observed_at: new Date().toISOString(),
            host: 'localhost',
            site: 'demo',
            ip: '127.0.0.1',
            trigger: 'suspicious_uri',
            connections: 6,
            errors: 6,
            successes: 0,
            window_seconds: 60,
          },
        ],
      },
    })
    assert.equal(signal.status, 200, JSON.stringify(signal.body))
    const report = api('/api/web-candidates').body as { candidates: { instance_id: string; fingerprint: string }[] }
    assert.deepEqual(
      report.candidates.map((c) => [c.instance_id, c.fingerprint]),
      [['tlsgate-1', fp.fingerprint]],
    )

    // The printed control-plane command blocks it for this gate; the gate pulls it and refuses.
    const block = paste(command(tlsgate, 'bin/edgegate decision block').replace('<fingerprint>', fp.fingerprint))
    assert.equal(block.status, 0, block.stderr)
    const refused = await eventually('the client refused after the pull', 30_000, () => {
      const r = paste(curl)
      return r.status !== 0 ? r : undefined
    })
    assert.match(refused.stderr, /SSL|TLS|alert|handshake|reset/i)
    const local = paste(`${command(tlsgate, 'bin/tlsgate list')} --json`)
    assert.equal(local.status, 0, local.stderr)
    const rows = JSON.parse(local.stdout) as { fingerprint: string; verdict: string }[]
    assert.equal(rows.find((r) => r.fingerprint === fp.fingerprint)?.verdict, 'blocked', local.stdout)
  })

  test('without edgegate the gate starts on local verdicts, and the control_plane section it had is gone', async () => {
    await tlsgate.stop()
    const alone = await startTlsgate(context('tlsgate', {}))
    tlsgate = alone
    const config = JSON.parse(readFileSync(join(home, 'tlsgate', 'config.json'), 'utf8'))
    assert.equal(config.control_plane, undefined)
    assert.ok(alone.notes?.includes('edgegate is not running: local verdicts only, no control-plane sync'))
    assert.ok(said.at(-1)?.endsWith(', local verdicts only (edgegate is not running)'), said.at(-1))
    const status = paste(command(alone, 'bin/tlsgate status'))
    assert.equal(status.status, 0, status.stderr)
    assert.match(status.stdout, /^gate: running/m)
  })
})
