/**
 * The blocklist refresh job end to end: sources served over HTTPS by the test (test CA), two
 * real kresd processes on one port with a real knotd behind them, the `dnsctl refresh
 * blocklists` command as a child process, and the health the result file feeds.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  createTestCa,
  dnsQuery,
  type Knot,
  type Kresd,
  startKnot,
  startKresd,
  type TestCa,
  tempDir,
} from '@gatehouse/testkit'
import { refreshOptions } from '../src/blocklists/job.ts'
import { refreshBlocklists } from '../src/blocklists/refresh.ts'
import { BlocklistService } from '../src/blocklists/service.ts'
import { type Config, loadDnsctlConfig } from '../src/config.ts'
import { HealthService } from '../src/health/service.ts'
import { loadedGeneration } from '../src/resolver/rollout.ts'
import { zoneText } from './helpers.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

interface Served {
  body: string | Buffer
  type?: string
  etag?: string
  status?: number
  location?: string
}

/** An HTTPS list server whose responses the test changes; counts conditional hits. */
async function listServer(ca: TestCa) {
  const cert = ca.issueServer(['localhost', '127.0.0.1'])
  const routes = new Map<string, Served>()
  const hits = { conditional: 0, notModified: 0 }
  const server: Server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    const r = routes.get(req.url ?? '')
    if (!r) return res.writeHead(404).end('not found')
    if (req.headers['if-none-match']) hits.conditional++
    if (r.etag && req.headers['if-none-match'] === r.etag) {
      hits.notModified++
      return res.writeHead(304).end()
    }
    res.writeHead(r.status ?? 200, {
      'content-type': r.type ?? 'text/plain; charset=utf-8',
      ...(r.etag ? { etag: r.etag } : {}),
      ...(r.location ? { location: r.location } : {}),
    })
    res.end(r.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `https://localhost:${(server.address() as AddressInfo).port}`
  return { routes, hits, base, close: () => new Promise<void>((r) => server.close(() => r())) }
}

const HOSTS = `# a hosts file
127.0.0.1 localhost
::1 localhost ip6-localhost
0.0.0.0 ads.hosts.test tracker.hosts.test # inline comment
0.0.0.0 shared.test
`
const DOMAINS = `# plain list
Plain.Domains.TEST.
shared.test
*.wild.domains.test
bücher.domains.test
keep.allowed-parent.test
`
const ADBLOCK = `[Adblock Plus 2.0]
! comment
||adblock.test^
||allowed-parent.test^
@@||ok.adblock.test^
||cdn.adblock.test/path.js
example.org##.banner
`
const JUNK_NAMES = `${Array.from({ length: 50 }, (_, i) => `not a domain ${i}!`).join('\n')}\nreal.junk.test\n`

async function rcode(port: number, name: string) {
  return (await dnsQuery(port, name, 'A')).rcode
}

/**
 * The rcode of a name that must not be blocked. kresd stubs every name the RPZ does not answer
 * to the test's knotd (allowed names under a blocked parent too: see testkit's kresdConfig), which
 * answers its zones and refuses other names (SERVFAIL from kresd). Any answer but NXDOMAIN shows
 * the name was not blocked.
 */
async function unblockedRcode(port: number, name: string) {
  return (await dnsQuery(port, name, 'A')).rcode
}

/** A zone on the test's knotd under a blocked parent: its allowed name must resolve from it. */
const ALLOWED_PARENT_ZONE = `$ORIGIN allowed-parent.test.
$TTL 3600
@ IN SOA ns1 hostmaster 1 3600 900 604800 300
@ IN NS ns1
ns1 IN A 192.0.2.1
keep 300 IN A 192.0.2.77
other 300 IN A 192.0.2.78
`

function runCli(config: Record<string, string>, ...args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'refresh', 'blocklists', ...args],
      { env: { PATH: process.env.PATH, ...config } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('dnsctl refresh: usage', () => {
  const cli = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [MAIN, 'refresh', ...args],
        { env: { PATH: process.env.PATH } },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
    })
  test('--help exits 0; an unknown job exits 2; zones without configuration exits 2', async () => {
    const help = await cli('blocklists', '--help')
    assert.equal(help.code, 0)
    assert.match(help.stdout, /^Usage: dnsctl refresh blocklists \[options\]/)
    const unknown = await cli('everything')
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /unknown command 'everything'/)
    const zones = await cli('zones', '--state-dir', tempDir('dnsctl-usage-').path)
    assert.equal(zones.code, 2)
    assert.equal(zones.stderr, 'dnsctl: no transfer zones configured (--transfer-zone and --transfer-primary)\n')
  })
})

describe('blocklist refresh with two kresd processes', () => {
  let ca: TestCa
  let knot: Knot
  let kresd: Kresd
  let lists: Awaited<ReturnType<typeof listServer>>
  let env: Record<string, string>
  let config: Config
  const state = tempDir('dnsctl-blocklist-')

  before(async () => {
    ca = createTestCa()
    knot = await startKnot({ zones: { 'example.test': zoneText(), 'allowed-parent.test': ALLOWED_PARENT_ZONE } })
    kresd = await startKresd({ instances: 2, stub: `127.0.0.1@${knot.port}` })
    lists = await listServer(ca)
    env = {
      DNSCTL_STATE_DIR: state.path,
      DNSCTL_BLOCKLIST_CA_FILE: ca.caPath,
      DNSCTL_BLOCKLIST_MAX_BYTES: '64KiB',
      DNSCTL_BLOCKLIST_FETCH_TIMEOUT: '10s',
      DNSCTL_RESOLVER_RPZ_FILES: kresd.instances.map((i) => i.rpzFile).join(','),
      DNSCTL_RESOLVER_ADDRESSES: kresd.instances.map((i) => `127.0.0.1:${i.port}`).join(','),
      DNSCTL_RESOLVER_LOAD_TIMEOUT: '60s',
    }
    config = loadDnsctlConfig([], env)
  })
  after(async () => {
    await lists?.close()
    await kresd?.stop()
    await knot?.stop()
    ca?.remove()
    state.remove()
  })

  const configure = async (sources: string[], allow: string[] = [], deny: string[] = []) => {
    const service = new BlocklistService(config.blocklistDir)
    const current = await service.read()
    await service.put({ sources, allow, deny }, current.revision, false)
  }
  const health = () => new HealthService(config.resultsDir, () => new Date()).status()

  test('compiles hosts, plain and adblock sources; junk sources fail one by one and poison nothing', async () => {
    lists.routes.set('/hosts.txt', { body: HOSTS, etag: '"h1"' })
    lists.routes.set('/domains.txt', { body: DOMAINS })
    lists.routes.set('/adblock.txt', { body: ADBLOCK, etag: '"a1"' })
    lists.routes.set('/page.html', {
      body: '<!doctype html><html><body>ads.html.test</body></html>',
      type: 'text/html',
    })
    lists.routes.set('/sneaky.txt', { body: '<html><body>\nsneaky.html.test\n</body></html>\n' })
    lists.routes.set('/binary.txt', { body: Buffer.concat([Buffer.from('bin.test\n'), randomBytes(4096)]) })
    lists.routes.set('/huge.txt', { body: 'x'.repeat(100_000).replace(/x{20}/g, 'big.junk.test\nxxx') })
    lists.routes.set('/junk.txt', { body: JUNK_NAMES })
    lists.routes.set('/redirect.txt', { status: 302, body: '', location: `http://127.0.0.1:1/plain.txt` })
    lists.routes.set('/empty.txt', { body: '# nothing here\n' })
    const junk = [
      'page.html',
      'sneaky.txt',
      'binary.txt',
      'huge.txt',
      'junk.txt',
      'redirect.txt',
      'empty.txt',
      'missing.txt',
    ]
    await configure(
      [...['hosts.txt', 'domains.txt', 'adblock.txt'], ...junk].map((p) => `${lists.base}/${p}`),
      ['keep.allowed-parent.test', 'operator-allowed.shared.test'],
      ['operator-denied.test'],
    )

    const run = await runCli(env, '--json')
    assert.equal(run.code, 1, run.stderr)
    const report = JSON.parse(run.stdout)
    const byPath = (p: string) => report.sources.find((s: { url: string }) => s.url.endsWith(`/${p}`))
    for (const p of ['hosts.txt', 'domains.txt', 'adblock.txt']) {
      assert.equal(byPath(p).ok, true, `${p}: ${byPath(p).error}`)
      assert.equal(byPath(p).origin, 'downloaded')
    }
    assert.match(byPath('page.html').error, /serves HTML \(content-type text\/html\)/)
    assert.match(byPath('sneaky.txt').error, /HTML or XML page/)
    assert.match(byPath('binary.txt').error, /binary data/)
    assert.match(byPath('huge.txt').error, /larger than the 65536-byte limit/)
    assert.match(byPath('junk.txt').error, /50 of 51 entries are not valid domain names/)
    assert.match(byPath('redirect.txt').error, /redirect \(302\); redirects are not followed/)
    assert.match(byPath('empty.txt').error, /holds no domain names/)
    assert.match(byPath('missing.txt').error, /answered 404/)
    for (const p of junk) assert.equal(byPath(p).origin, 'none')
    assert.equal(report.ok, false)
    assert.match(report.error, /page\.html: serves HTML/)

    // Every kresd process loaded this generation.
    for (const i of kresd.instances) {
      assert.equal(await loadedGeneration({ host: '127.0.0.1', port: i.port }), report.generation)
    }
    const blocked = [
      'ads.hosts.test',
      'tracker.hosts.test',
      'shared.test',
      'deep.sub.shared.test',
      'plain.domains.test',
      'x.wild.domains.test',
      'xn--bcher-kva.domains.test',
      'adblock.test',
      'cdn.adblock.test',
      'allowed-parent.test',
      'other.allowed-parent.test',
      'operator-denied.test',
    ]
    for (const name of blocked) assert.equal(await rcode(kresd.port, name), 'NXDOMAIN', name)
    // Allowed: by a source's @@ rule, and by the operator (also under a blocked parent).
    for (const name of ['ok.adblock.test', 'keep.allowed-parent.test', 'operator-allowed.shared.test']) {
      assert.notEqual(await unblockedRcode(kresd.port, name), 'NXDOMAIN', name)
    }
    // The allowed name under a blocked parent is resolved through the stub (knotd's zone), while
    // its sibling, which knotd also serves, stays blocked.
    const keep = await dnsQuery(kresd.port, 'keep.allowed-parent.test', 'A')
    assert.equal(keep.rcode, 'NOERROR')
    assert.deepEqual(
      keep.answers.map((a) => (a.type === 'A' ? a.data : a.type)),
      ['192.0.2.77'],
    )
    assert.equal(await rcode(kresd.port, 'other.allowed-parent.test'), 'NXDOMAIN')
    // Nothing from the junk sources got in.
    const compiled = readFileSync(report.compiled_file, 'utf8')
    for (const name of ['ads.html.test', 'sneaky.html.test', 'bin.test', 'big.junk.test', 'real.junk.test']) {
      assert.notEqual(await unblockedRcode(kresd.port, name), 'NXDOMAIN', name)
      assert.ok(!compiled.includes(name), name)
    }
    // Unblocked names still resolve through kresd from knotd.
    const www = await dnsQuery(kresd.port, 'www.example.test', 'A')
    assert.equal(www.rcode, 'NOERROR')
    assert.deepEqual(
      www.answers.map((a) => (a.type === 'A' ? a.data : a.type)),
      ['192.0.2.10'],
    )
    // Result file and health.
    const result = JSON.parse(readFileSync(join(config.resultsDir, 'blocklist-refresh.json'), 'utf8'))
    assert.equal(result.ok, false)
    assert.equal(result.last_success_at, null)
    assert.equal(result.domain_count, report.domain_count)
    const status = await health()
    assert.equal(status.blocklist_refresh?.ok, false)
    assert.ok(status.problems.some((p) => p.startsWith('the last blocklist refresh failed: ')))
    assert.ok(status.problems.includes('blocklist data is more than 26 hours old'))
  })

  test('success advances last_success_at; conditional requests; a failed source keeps its last good copy', async () => {
    await configure(['hosts.txt', 'domains.txt', 'adblock.txt'].map((p) => `${lists.base}/${p}`))
    const first = await runCli(env)
    assert.equal(first.code, 0, first.stderr)
    assert.match(first.stdout, /^ok: \d+ blocked domains/m)
    let status = await health()
    assert.equal(status.blocklist_refresh?.ok, true)
    assert.ok(!status.problems.some((p) => p.includes('blocklist')), status.problems.join('\n'))
    const success = status.blocklist_refresh!.last_success_at
    assert.ok(success)

    // Unchanged sources with an ETag answer 304 and are not downloaded again.
    const before304 = lists.hits.notModified
    const again = await refreshBlocklists(refreshOptions(config))
    assert.equal(again.ok, true)
    assert.equal(again.sources.find((s) => s.url.endsWith('/hosts.txt'))?.origin, 'not_modified')
    assert.equal(again.sources.find((s) => s.url.endsWith('/domains.txt'))?.origin, 'downloaded')
    assert.equal(lists.hits.notModified, before304 + 2)

    // The hosts source breaks (HTML error page): its last good copy stays in the list.
    lists.routes.set('/hosts.txt', { body: '<html>maintenance</html>', type: 'text/html', status: 200 })
    const broken = await refreshBlocklists(refreshOptions(config))
    assert.equal(broken.ok, false)
    const hosts = broken.sources.find((s) => s.url.endsWith('/hosts.txt'))!
    assert.equal(hosts.origin, 'last_good_copy')
    assert.equal(hosts.ok, false)
    assert.equal(hosts.domains, 3)
    assert.equal(broken.last_success_at, again.last_success_at)
    assert.equal(await rcode(kresd.port, 'ads.hosts.test'), 'NXDOMAIN')
    status = await health()
    assert.equal(status.healthy, false)
    assert.ok(status.problems.some((p) => p.includes('hosts.txt: serves HTML')))

    // Fixed again: healthy again.
    lists.routes.set('/hosts.txt', { body: HOSTS, etag: '"h2"' })
    const fixed = await refreshBlocklists(refreshOptions(config))
    assert.equal(fixed.ok, true)
    status = await health()
    assert.equal(status.blocklist_refresh?.ok, true)
  })

  test('the summary counts one of a kind in the singular', async () => {
    lists.routes.set('/one.txt', { body: 'one.single.test\n' })
    await configure([`${lists.base}/one.txt`], ['keep.one.single.test'])
    const run = await runCli(env)
    assert.equal(run.code, 0, run.stderr)
    assert.match(
      run.stdout,
      new RegExp(`^${lists.base.replaceAll('.', '\\.')}/one\\.txt\n  1 domain \\(downloaded\\)$`, 'm'),
    )
    assert.match(run.stdout, /^ok: 1 blocked domain, 1 allowed exception, \d+ ms$/m)
  })

  test('resolution never stops while the two processes reload a 200k-name list in turn', async () => {
    const generation = (n: number) =>
      `always.blocked.test\n${Array.from({ length: 100_000 }, (_, i) => `gen${n}-${i}.bulk.test`).join('\n')}\n`
    lists.routes.set('/bulk.txt', { body: generation(1) })
    await configure([`${lists.base}/bulk.txt`])
    const opts = { ...refreshOptions(config), limits: { ...refreshOptions(config).limits, maxBytes: 64 << 20 } }
    assert.equal((await refreshBlocklists(opts)).ok, true)

    lists.routes.set('/bulk.txt', { body: generation(2) })
    let done = false
    const refresh = refreshBlocklists(opts).finally(() => {
      done = true
    })
    // Keep asking while the refresh runs: every answer must be there and be right.
    const wrong: string[] = []
    let answered = 0
    let slowest = 0
    const worker = async () => {
      while (!done) {
        const t0 = performance.now()
        const [blockedAnswer, allowedAnswer] = await Promise.all([
          dnsQuery(kresd.port, 'always.blocked.test', 'A', '127.0.0.1', 10_000).catch((e: Error) => e.message),
          dnsQuery(kresd.port, 'www.example.test', 'A', '127.0.0.1', 10_000).catch((e: Error) => e.message),
        ])
        slowest = Math.max(slowest, performance.now() - t0)
        if (typeof blockedAnswer === 'string' || blockedAnswer.rcode !== 'NXDOMAIN')
          wrong.push(`always.blocked.test: ${JSON.stringify(blockedAnswer)}`)
        if (typeof allowedAnswer === 'string' || allowedAnswer.rcode !== 'NOERROR')
          wrong.push(`www.example.test: ${JSON.stringify(allowedAnswer)}`)
        answered += 2
      }
    }
    await Promise.all([worker(), worker(), worker(), worker()])
    const report = await refresh
    assert.equal(report.ok, true, report.error ?? '')
    assert.deepEqual(wrong, [])
    assert.ok(answered > 0)
    // Both processes now hold generation 2.
    assert.equal(await rcode(kresd.port, 'gen2-99999.bulk.test'), 'NXDOMAIN')
    assert.notEqual(await unblockedRcode(kresd.port, 'gen1-99999.bulk.test'), 'NXDOMAIN')
    process.stderr.write(`# swap under load: ${answered} answers, slowest ${slowest.toFixed(0)} ms\n`)
  })
})
