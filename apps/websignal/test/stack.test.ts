/**
 * `npm start`'s web signal agent beside the stack's edgegate and TLS gate (the three apps'
 * stack.ts, started in the stack's order, state in a temporary GATEHOUSE_HOME, ports shifted):
 * websignal tails the access log of the demo nginx behind the gate, and the demo traffic
 * (visitors and a scanner from loopback addresses of their own) goes through the gate. Nothing
 * here posts a signal or a sighting: the scanner becomes a web candidate on edgegate from the
 * agent's signals and the gate's sightings alone, and blocking the candidate's fingerprint with
 * the printed command makes the gate refuse the scanner while the visitors go on. Without the
 * gate the agent tails its sample log as before. Printed commands are pasted into a clean shell.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { stackHarness } from '@gatehouse/testkit'
import type { StackService } from '../../../packages/kit/src/stack.ts'
import { startStack as startEdgegate } from '../../edgegate/stack.ts'
import { startStack as startTlsgate } from '../../tlsgate/stack.ts'
import { startStack as startWebsignal } from '../stack.ts'
import { SCANNERS, VISITORS } from '../stack-traffic.ts'

const stack = stackHarness('websignal-stack-', 3)
const { home, said, port, context, paste, command, eventually } = stack

type Candidate = { instance_id: string; fingerprint: string; networks: string[]; ip_count: number; errors: number }
type Fingerprint = { fingerprint: string; sightings: { ip: string }[] }

const network = (ip: string) => `${ip.slice(0, ip.lastIndexOf('.'))}.0/24`

describe('the stack: the scanner through the TLS gate becomes a web candidate on edgegate', () => {
  const services: Record<string, StackService> = {}
  let adminToken: string
  let ca: string

  const api = (path: string) => {
    const r = spawnSync(
      'curl',
      [
        '--silent',
        '--show-error',
        '--fail',
        '--cacert',
        ca,
        '-H',
        `Authorization: Bearer ${adminToken}`,
        `https://127.0.0.1:${port(8443)}${path}`,
      ],
      { encoding: 'utf8' },
    )
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  }
  /** The fingerprints tlsgate-1 uploaded, with the addresses it saw them from. */
  const gateFingerprints = () =>
    (api('/api/fingerprints?instance_id=tlsgate-1') as { fingerprints: Fingerprint[] }).fingerprints

  before(async () => {
    const started: Record<string, StackService> = {}
    // The order of scripts/stack.ts.
    for (const [app, start] of [
      ['edgegate', startEdgegate],
      ['tlsgate', startTlsgate],
      ['websignal', startWebsignal],
    ] as const) {
      services[app] = await start(context(app, started))
      started[app] = services[app]
    }
    adminToken = (
      JSON.parse(readFileSync(join(home, 'edgegate', 'credentials.json'), 'utf8')) as { adminToken: string }
    ).adminToken
    ca = join(home, 'edgegate', 'tls', 'ca.crt')
  })
  after(async () => {
    for (const app of ['websignal', 'tlsgate', 'edgegate']) await services[app]?.stop()
    stack.remove()
  })

  test("websignal tails the demo nginx's access log under the gate's host name, and says so", () => {
    const config = JSON.parse(readFileSync(join(home, 'websignal', 'config.json'), 'utf8'))
    const accessLog = join(home, 'tlsgate', 'nginx', 'logs', 'access.log')
    assert.deepEqual(config.inputs, [{ path: accessLog, format: 'combined', site: 'demo', host: 'localhost' }])
    assert.ok(
      said.some((l) => l.startsWith(`[websignal] tailing ${accessLog} (the demo nginx behind the TLS gate 127.0.0.1:`)),
      said.join('\n'),
    )
    assert.match(command(services.websignal!, 'bin/websignal replay'), /--log \S+\/tlsgate\/nginx\/logs\/access\.log /)
  })

  test('the scanner is a web candidate for tlsgate-1 and its fingerprint; the visitors are not', async () => {
    const printed = command(services.websignal!, 'curl --cacert ')
    assert.ok(printed.endsWith('/api/web-candidates'), printed)
    const scannerNetworks = new Set(SCANNERS.map(network))
    const candidate = await eventually('a web candidate from the scanner', 90_000, () => {
      const r = paste(printed)
      assert.equal(r.status, 0, r.stderr)
      const report = JSON.parse(r.stdout) as { candidates: Candidate[] }
      return report.candidates.find((c) => c.networks.some((n) => scannerNetworks.has(n)))
    })
    assert.equal(candidate.instance_id, 'tlsgate-1')
    assert.ok(candidate.errors > 0, JSON.stringify(candidate))
    // Only the scanner's networks: the visitors' requests are answered, so they are no signal.
    assert.ok(
      candidate.networks.every((n) => scannerNetworks.has(n)),
      JSON.stringify(candidate),
    )
    // The candidate's fingerprint is the one the gate saw from the scanner's addresses, and
    // only from them: the visitors (another ClientHello) have a fingerprint of their own.
    const fingerprints = gateFingerprints()
    const scanner = fingerprints.find((f) => f.fingerprint === candidate.fingerprint)
    assert.ok(scanner, JSON.stringify(fingerprints))
    assert.ok(
      scanner.sightings.every((s) => SCANNERS.includes(s.ip)),
      JSON.stringify(scanner),
    )
    const visitors = fingerprints.find((f) => f.sightings.some((s) => VISITORS.includes(s.ip)))
    assert.ok(visitors, `the gate saw no visitor:\n${JSON.stringify(fingerprints)}`)
    assert.notEqual(visitors.fingerprint, candidate.fingerprint)
    const report = api('/api/web-candidates') as { candidates: Candidate[] }
    assert.ok(!report.candidates.some((c) => c.fingerprint === visitors.fingerprint), JSON.stringify(report))
    // Every signal websignal-1 published names a scanner address.
    const signals = (api('/api/signals?limit=1000') as { signals: { instance_id: string; ip: string; host: string }[] })
      .signals
    const ours = signals.filter((s) => s.instance_id === 'websignal-1')
    assert.ok(ours.length > 0, JSON.stringify(signals))
    assert.ok(
      ours.every((s) => SCANNERS.includes(s.ip) && s.host === 'localhost'),
      JSON.stringify(ours),
    )
  })

  test("blocking the candidate's fingerprint on edgegate makes the gate refuse the scanner, not the visitors", async () => {
    const report = api('/api/web-candidates') as { candidates: Candidate[] }
    const scannerNetworks = new Set(SCANNERS.map(network))
    const candidate = report.candidates.find((c) => c.networks.some((n) => scannerNetworks.has(n)))
    assert.ok(candidate, JSON.stringify(report))
    const block = paste(
      command(services.websignal!, 'bin/edgegate decision block').replace('<fingerprint>', candidate.fingerprint),
    )
    assert.equal(block.status, 0, block.stderr)
    // The gate pulls the decision and refuses the scanner's next connection with a TLS alert.
    await eventually('the scanner refused', 60_000, () =>
      said.find(
        (l) =>
          l.startsWith('[websignal] demo scanner: the gate at 127.0.0.1:') && l.endsWith('refuses their connections'),
      ),
    )
    const local = paste('bin/tlsgate list --json')
    assert.equal(local.status, 0, local.stderr)
    const rows = JSON.parse(local.stdout) as { fingerprint: string; verdict: string }[]
    assert.equal(rows.find((r) => r.fingerprint === candidate.fingerprint)?.verdict, 'blocked', local.stdout)
    // The visitors still reach nginx: new lines from their addresses after the refusal.
    const accessLog = join(home, 'tlsgate', 'nginx', 'logs', 'access.log')
    const mark = statSync(accessLog).size
    await eventually('a visitor served after the block', 30_000, () => {
      const added = readFileSync(accessLog).subarray(mark).toString()
      return added.split('\n').find((l) => VISITORS.includes(l.split(' ')[0]!) && / 200 /.test(l))
    })
    assert.ok(!said.some((l) => l.startsWith('[websignal] demo visitors:')), said.join('\n'))
  })

  test('without the TLS gate the agent tails its sample log, and prints no web candidate command', async () => {
    await services.websignal!.stop()
    const alone = await startWebsignal(context('websignal', { edgegate: services.edgegate! }))
    services.websignal = alone
    const config = JSON.parse(readFileSync(join(home, 'websignal', 'config.json'), 'utf8'))
    assert.deepEqual(config.inputs, [
      { path: join(home, 'websignal', 'access.log'), format: 'combined', site: 'demo', host: 'www.example.test' },
    ])
    assert.ok(said.at(-1)?.includes('(sample traffic written every 0.5 s)'), said.at(-1))
    assert.ok(!alone.notes?.some((n) => n.includes('/api/web-candidates')), alone.notes?.join('\n'))
  })
})
