/** The `websignal` binary as a child process: serve, doctor, replay, and startup failures. */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync, chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { createTestCa, freePort, startChild, startRedis, type Redis as TestRedis, tempDir } from '@gatehouse/testkit'
import { configPath } from '../src/config.ts'
import { OffsetFile } from '../src/tail/offsets.ts'
import { line, MAIN, waitFor, writeConfig } from './helpers.ts'

let redis: TestRedis
before(async () => {
  redis = await startRedis()
})
after(() => redis?.stop())

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
  })
}

const T0 = Date.UTC(2026, 10, 25, 10, 0, 0)
const logDir = tempDir('websignal-cli-')
after(() => logDir.remove())
const LOG = join(logDir.path, 'access.log')
writeFileSync(LOG, '')
const INPUTS = [{ path: LOG, format: 'combined', site: 'main' }]

test('strict config: every unknown or bad field is named, exit 1', async () => {
  const c = writeConfig({
    inputs: [{ ...INPUTS[0], colour: 'red' }],
    windw: '5m',
    window: 'soon',
    store: { sentinel_name: 'mymaster' },
  })
  const r = await run(['serve', '--config', c.path])
  assert.equal(r.code, 1)
  assert.match(r.stderr, /windw: unknown key/)
  // A rule across fields is named in the same run, after the fields.
  assert.match(r.stderr, /window: .*\n(.*\n)*websignal: store: sentinels and sentinel_name go together\n$/)
  assert.match(r.stderr, /window: /)
  assert.match(r.stderr, /^websignal: inputs\[0\]\.colour: unknown key/m)
  // Problems of several entries: one line each.
  const two = writeConfig({
    inputs: [
      { ...INPUTS[0], format: 'nope' },
      { ...INPUTS[0], path: 'relative.log' },
    ],
  })
  const r2 = await run(['doctor', '--config', two.path])
  assert.equal(r2.code, 1)
  assert.match(
    r2.stderr,
    /^websignal: inputs\[0\]\.format: must be one of combined, vhost_combined, json, got "nope"$/m,
  )
  assert.match(r2.stderr, /^websignal: inputs\[1\]\.path: must be an absolute file path$/m)
  two.dir.remove()
  c.dir.remove()
})

test('a missing secret file stops startup and names it', async () => {
  const c = writeConfig({ inputs: INPUTS, control_plane: { url: 'https://127.0.0.1:1', instance_id: 'n1' } })
  const r = await run(['doctor', '--config', c.path], { WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE: '/nonexistent/token' })
  assert.equal(r.code, 1)
  assert.match(
    r.stderr,
    /WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE: secret file \/nonexistent\/token cannot be read \(ENOENT\)/,
  )
  const http = writeConfig({
    inputs: INPUTS,
    control_plane: { url: 'http://cp.example', instance_id: 'n1', token: 'x' },
  })
  const r2 = await run(['doctor', '--config', http.path])
  assert.equal(r2.code, 1)
  assert.match(r2.stderr, /control_plane\.url: must use https/)
  c.dir.remove()
  http.dir.remove()
})

test("doctor shows the control-plane client certificate's expiry and fails on an expired one", async () => {
  const ca = createTestCa()
  const config = (days: number) => {
    const cert = ca.issueClient('web-1', { days })
    chmodSync(cert.keyPath, 0o644) // a key every user may read: a warning, not a refusal
    return writeConfig({
      inputs: INPUTS,
      control_plane: {
        url: 'https://cp.example.test',
        instance_id: 'web-1',
        client_cert: cert.certPath,
        client_key: cert.keyPath,
        ca: ca.caPath,
      },
    })
  }
  const fresh = config(30)
  const expiredConfig = config(-1)
  try {
    const ok = await run(['doctor', '--config', fresh.path])
    assert.equal(ok.code, 0, ok.stderr)
    assert.match(ok.stdout, /^client certificate: valid until \S+Z \(29 days left\)$/m)
    assert.match(ok.stdout, /^control-plane CA: valid until \S+Z \(59 days left\)$/m)
    assert.match(
      ok.stdout,
      /^warning: \S+\.key holds the control-plane client key \(control_plane\.client_key\) and every user of this host can read it \(mode 0644\); chmod o-r /m,
    )
    const expired = await run(['doctor', '--config', expiredConfig.path])
    assert.equal(expired.code, 1)
    assert.match(expired.stderr, /control_plane\.client_cert: EXPIRED on \S+Z; the control plane refuses this node/)
  } finally {
    fresh.dir.remove()
    expiredConfig.dir.remove()
    ca.remove()
  }
})

test('doctor summarises without touching the store; a bad pattern list is named', async () => {
  const patterns = join(logDir.path, 'patterns')
  mkdirSync(patterns)
  writeFileSync(join(patterns, 'local.txt'), '# ours\n^/secret-admin\n')
  const c = writeConfig({
    inputs: INPUTS,
    store: { url: 'redis://127.0.0.1:1' },
    detection: { pattern_dirs: [patterns], disabled_lists: ['wordpress'] },
  })
  const r = await run(['doctor', '--config', c.path])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /local \(1\)/)
  assert.doesNotMatch(r.stdout, /wordpress/)
  assert.match(r.stdout, /not contacted/)
  writeFileSync(join(patterns, 'broken.txt'), 'ok\n(unclosed\n')
  const bad = await run(['doctor', '--config', c.path])
  assert.equal(bad.code, 1)
  assert.match(bad.stderr, /broken\.txt:2: /)
  c.dir.remove()
})

test('the store unreachable at startup: exit 1, naming the address and the cause', async () => {
  const port = await freePort()
  const c = writeConfig({
    inputs: INPUTS,
    store: { url: `redis://127.0.0.1:${port}`, command_timeout: '200ms' },
  })
  const r = await run(['serve', '--config', c.path])
  assert.equal(r.code, 1)
  assert.equal(
    r.stderr,
    `websignal: the store 127.0.0.1:${port} is unreachable: connect ECONNREFUSED 127.0.0.1:${port}\n`,
  )
  c.dir.remove()
})

test('a config file that cannot be read or parsed is the one problem reported', async () => {
  const missing = await run(['serve', '--config', join(logDir.path, 'nothing.json')])
  assert.equal(missing.code, 1)
  assert.equal(missing.stderr, `websignal: config file ${join(logDir.path, 'nothing.json')}: cannot be read (ENOENT)\n`)
  // Without --config nor $WEBSIGNAL_CONFIG: how to name one. The default is looked for in a
  // folder of the test's own ($WEBSIGNAL_CONFIG_DIR), whatever this host's /etc holds.
  assert.equal(configPath(undefined, {}), '/etc/gatehouse/websignal.json')
  const etc = join(logDir.path, 'etc')
  mkdirSync(etc)
  const bare = spawnSync(process.execPath, [MAIN, 'status'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, WEBSIGNAL_CONFIG_DIR: etc },
  })
  assert.equal(bare.status, 1)
  assert.equal(
    bare.stderr,
    `websignal: config file ${etc}/websignal.json (the default) does not exist: name the agent's config with --config FILE or $WEBSIGNAL_CONFIG\n`,
  )
  // Once there, the default is the file read.
  writeFileSync(
    join(etc, 'websignal.json'),
    JSON.stringify({ listen: `127.0.0.1:${await freePort()}`, state_dir: join(etc, 'state'), inputs: INPUTS }),
  )
  const found = spawnSync(process.execPath, [MAIN, 'status'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, WEBSIGNAL_CONFIG_DIR: `${etc}/` },
  })
  assert.equal(found.status, 0, found.stderr)
  assert.match(found.stdout, new RegExp(`^config: ${etc}/websignal\\.json$`, 'm'))
  const broken = join(logDir.path, 'broken.json')
  writeFileSync(broken, '{"inputs": [')
  const r = await run(['doctor', '--config', broken])
  assert.equal(r.code, 1)
  assert.match(r.stderr, /^websignal: config file .*broken\.json: invalid JSON \(.*\)\n$/)
})

test('a store database that does not exist stops startup (it used to fall back to database 0); status names the database and reads no secret', async () => {
  const c = writeConfig({ inputs: INPUTS, store: { url: `${redis.url}/99`, namespace: 'nodb' } })
  const r = await run(['serve', '--config', c.path])
  assert.equal(r.code, 1)
  assert.match(r.stderr, /^websignal: store database 99 cannot be selected \(ERR DB index is out of range\)/m)
  assert.doesNotMatch(r.stderr, /\n\s+at /)
  const word = writeConfig({ inputs: INPUTS, store: { url: `${redis.url}/two` } })
  const bad = await run(['doctor', '--config', word.path])
  assert.equal(bad.code, 1)
  assert.match(bad.stderr, /store\.url: the path is a database number \(redis:\/\/host:6379\/2\), not "\/two"/)
  const three = writeConfig({
    inputs: INPUTS,
    store: { url: `${redis.url}/3` },
    // Status sends no token: a token file this user cannot read (or one not deployed here) does not stop it.
    control_plane: { url: 'https://cp.example.test', instance_id: 'web-1', token_file: '/nonexistent/token' },
  })
  const status = await run(['status', '--config', three.path])
  assert.equal(status.code, 0, status.stderr)
  assert.match(status.stdout, new RegExp(`^store: ${new URL(redis.url).host}/3, namespace`, 'm'))
  const doctor = await run(['doctor', '--config', three.path])
  assert.match(doctor.stderr, /control_plane\.token_file: secret file \/nonexistent\/token cannot be read \(ENOENT\)/)
  for (const x of [c, word, three]) x.dir.remove()
})

test('serve: readiness, metrics, lines counted, an unreadable input keeps it unready, SIGTERM stops', async () => {
  const port = await freePort()
  const notAFile = join(logDir.path, 'dir.log')
  mkdirSync(notAFile)
  const c = writeConfig({
    listen: `127.0.0.1:${port}`,
    inputs: INPUTS,
    store: { url: redis.url, namespace: 'cli' },
    poll_interval: '50ms',
    flush_interval: '100ms',
    // Every log line the agent can write, scanned below for raw targets and user agents.
    log_level: 'debug',
  })
  const child = await startChild({
    name: 'websignal',
    command: process.execPath,
    args: [MAIN, 'serve', '--config', c.path],
    logFile: join(c.dir.path, 'websignal.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
    timeoutMs: 30_000,
  })
  after(() => child.stop())
  const healthz = await fetch(`http://127.0.0.1:${port}/healthz`)
  assert.equal(healthz.status, 200)
  appendFileSync(
    LOG,
    line('203.0.113.5', '/.env?k=tgt-cli-4d2c', 404, T0, 'ua-cli-7e1f').repeat(4) + 'not a log line\n',
  )
  const metrics = await waitFor('lines counted', async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    return /websignal_lines_parsed_total 4/.test(text) && text
  })
  for (const name of [
    'websignal_ready 1',
    'websignal_last_observation_timestamp_seconds 1795', // 2026-11-25
    'websignal_publisher_owner 0',
    'websignal_lines_unmatched_total{reason="no_match"} 1',
    'websignal_input_tail_restarts_total',
    'websignal_store_failures_total',
    'websignal_publisher_lease_failures_total',
    'websignal_signal_publish_failures_total',
    'websignal_analytics_publish_failures_total',
    'websignal_signal_outbox_depth',
    'websignal_analytics_outbox_depth',
  ]) {
    assert.ok(metrics.includes(name), `${name} in /metrics`)
  }
  assert.ok(!metrics.includes('203.0.113.5'), 'no IP in metrics')
  // status: the running agent, ready and not holding the lease (no control plane), the input read to its end.
  const status = await waitFor('the read position saved', async () => {
    const r = await run(['status', '--json', '--config', c.path])
    assert.equal(r.code, 0, r.stderr)
    const s = JSON.parse(r.stdout)
    // Four probes of /.env (the query hides nothing): a scanner signal, queued (no control plane).
    return s.inputs[0].state === 'caught_up' && s.agent.outbox === 1 && s
  })
  assert.equal(status.agent.running, true)
  assert.equal(status.agent.ready, true)
  assert.equal(status.agent.outbox, 1)
  assert.equal(status.agent.newest_line, new Date(T0).toISOString())
  assert.deepEqual(
    [status.inputs[0].path, status.inputs[0].behind, status.inputs[0].position],
    [LOG, 0, readFileSync(LOG).length],
  )
  const human = await run(['status', '--config', c.path])
  assert.equal(human.code, 0, human.stderr)
  assert.match(human.stdout, new RegExp(`^agent: running on 127\\.0\\.0\\.1:${port}, ready`, 'm'))
  assert.match(human.stdout, /^input .*access\.log \(site main, combined\): caught up/m)
  assert.match(human.stdout, /^control plane: none/m)
  // A reload request (logrotate's postrotate, systemctl reload) neither stops nor disturbs it.
  process.kill(child.pid, 'SIGHUP')
  await waitFor('the SIGHUP answered', () =>
    readFileSync(join(c.dir.path, 'websignal.log'), 'utf8').includes(
      'SIGHUP changes nothing: no control-plane credential files',
    ),
  )
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200)
  await child.stop()
  assert.equal(child.process.exitCode, 0, 'SIGTERM drains and exits 0')
  // A stopped agent is a state: status says so and still shows the inputs, exit 0; a line written
  // meanwhile shows as not read yet.
  appendFileSync(LOG, line('203.0.113.6', '/', 200, T0))
  const stopped = await run(['status', '--config', c.path])
  assert.equal(stopped.code, 0, stopped.stderr)
  assert.match(stopped.stdout, new RegExp(`^agent: not answering on 127\\.0\\.0\\.1:${port}`, 'm'))
  assert.match(stopped.stdout, /^input .*access\.log \(site main, combined\): \d+ B behind \(at /m)
  const output = readFileSync(join(c.dir.path, 'websignal.log'), 'utf8')
  assert.match(output, /"level":"debug"|store|lease|listen/i, 'the agent wrote its log')
  for (const secret of ['tgt-cli-4d2c', 'ua-cli-7e1f', '.env', 'not a log line']) {
    assert.ok(!output.includes(secret) && !metrics.includes(secret), `${secret} leaked to the log or metrics`)
  }

  // The same agent with an input it cannot read never becomes ready.
  const port2 = await freePort()
  const c2 = writeConfig({
    listen: `127.0.0.1:${port2}`,
    inputs: [...INPUTS, { path: notAFile, format: 'json', site: 'api' }],
    store: { url: redis.url, namespace: 'cli' },
    log_level: 'warn',
  })
  const child2 = await startChild({
    name: 'websignal',
    command: process.execPath,
    args: [MAIN, 'serve', '--config', c2.path],
    logFile: join(c2.dir.path, 'websignal.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${port2}/healthz`).catch(() => undefined))?.status === 503,
    timeoutMs: 30_000,
  })
  after(() => child2.stop())
  const body = (await (await fetch(`http://127.0.0.1:${port2}/readyz`)).json()) as { error: { code: string } }
  assert.equal(body.error.code, 'not_ready')
  // status names what keeps it unready and the input it cannot read; one that is not there yet is waited for.
  const s2 = await run(['status', '--config', c2.path])
  assert.equal(s2.code, 0, s2.stderr)
  assert.match(s2.stdout, /^agent: running on .*, not ready \(input api: cannot read the log/m)
  assert.doesNotMatch(s2.stdout, /lease/, 'no control plane: no lease to hold')
  assert.match(s2.stdout, /^input .*dir\.log \(site api, json\): cannot be read \(EISDIR\)$/m)
  // On a free port: the default one may be another suite's running agent (the stack tests').
  const c3 = writeConfig({
    listen: `127.0.0.1:${await freePort()}`,
    inputs: [{ path: join(logDir.path, 'later.log'), format: 'combined', site: 'x' }],
  })
  const s3 = JSON.parse((await run(['status', '--json', '--config', c3.path])).stdout)
  assert.deepEqual([s3.agent.running, s3.inputs[0].state, s3.positions_error], [false, 'missing', null])
  c3.dir.remove()
})

test('replay prints the signals it would send', async () => {
  const file = join(logDir.path, 'replay.log')
  writeFileSync(file, line('198.51.100.9', '/.git/config', 404, T0).repeat(3) + line('198.51.100.10', '/', 200, T0))
  const r = await run(['replay', '--log', file, '--format', 'combined', '--host', 'web.example'])
  assert.equal(r.code, 0, r.stderr)
  const signals = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
  assert.equal(signals.length, 1)
  assert.equal(signals[0].ip, '198.51.100.9')
  assert.equal(signals[0].host, 'web.example')
  assert.match(r.stderr, /4 lines parsed, 0 unmatched, 1 signal$/m)
  // A file that is not there is named in words, with its code.
  const missing = await run(['replay', '--log', join(logDir.path, 'none.log'), '--format', 'combined'])
  assert.equal(missing.code, 1)
  assert.match(missing.stderr.trim(), /^websignal: cannot read .*none\.log: no such file \(ENOENT\)$/)
  const usage = await run(['replay', '--log', file, '--format', 'apache'])
  assert.equal(usage.code, 2)
  // The window follows the config's rules (10s to 24h); a bad one is a usage error, not a crash.
  for (const [window, why] of [
    ['5x', /^websignal: --window: invalid duration "5x"/],
    ['0s', /^websignal: --window: must be at least 10s$/],
    ['25h', /^websignal: --window: must be at most 24h$/],
  ] as const) {
    const bad = await run(['replay', '--log', file, '--format', 'combined', '--window', window])
    assert.equal(bad.code, 2, bad.stderr)
    assert.match(bad.stderr.trim(), why)
  }
  const badSite = await run(['replay', '--log', file, '--format', 'json', '--site', 'bad site!'])
  assert.equal(badSite.code, 2, badSite.stderr)
})

test('replay --config reads the log as serve reads its input (format, syslog, JSON fields, site, host); flags override', async () => {
  const dir = join(logDir.path, 'replay-config')
  mkdirSync(dir)
  const shop = join(dir, 'shop.json.log')
  const blog = join(dir, 'blog.log')
  const json = (ip: string, uri: string) =>
    `${JSON.stringify({ client: ip, vhost: 'ignored because not a host!', uri, code: 404, t: new Date(T0).toISOString() })}\n`
  // JSON lines with the input's own field names: read with the defaults, nothing would parse.
  writeFileSync(shop, json('198.51.100.20', '/.env').repeat(3))
  writeFileSync(`${shop}.1`, json('198.51.100.21', '/.git/config').repeat(3))
  writeFileSync(blog, `<190>Nov 25 10:00:00 web1 nginx: ${line('198.51.100.30', '/wp-login.php', 404, T0)}`.repeat(3))
  const c = writeConfig({
    inputs: [
      {
        path: shop,
        format: 'json',
        site: 'shop',
        host: 'www.shop.example',
        json_fields: { ip: 'client', host: 'vhost', target: 'uri', status: 'code', time: 't' },
      },
      { path: blog, format: 'combined', syslog: true, site: 'blog' },
    ],
    // The agent's token file, which this user may not be able to read: replay sends nothing and does not read it.
    control_plane: { url: 'https://cp.example.test', instance_id: 'web-1', token_file: '/nonexistent/token' },
  })
  const signals = (stdout: string) =>
    stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { ip: string; host: string; site: string })
      .map((x) => [x.ip, x.host, x.site])
  try {
    const exact = await run(['replay', '--log', shop, '--config', c.path])
    assert.equal(exact.code, 0, exact.stderr)
    assert.deepEqual(signals(exact.stdout), [['198.51.100.20', 'www.shop.example', 'shop']])
    assert.match(
      exact.stderr,
      /^replay: read as the input \S+shop\.json\.log of \S+ \(json, site shop, host www\.shop\.example\)$/m,
    )
    assert.match(exact.stderr, /^replay: 3 lines parsed, 0 unmatched, 1 signal$/m)
    // A rotated file beside the input, named relative to the working directory, is that input's.
    const rotated = spawnSync(process.execPath, [MAIN, 'replay', '--log', 'shop.json.log.1', '--config', c.path], {
      cwd: dir,
      encoding: 'utf8',
    })
    assert.equal(rotated.status, 0, rotated.stderr)
    assert.deepEqual(signals(rotated.stdout), [['198.51.100.21', 'www.shop.example', 'shop']])
    // Syslog-wrapped, and no host in the input: the machine's host name, as serve names such lines.
    const wrapped = await run(['replay', '--log', blog, '--config', c.path])
    assert.equal(wrapped.code, 0, wrapped.stderr)
    assert.deepEqual(signals(wrapped.stdout), [['198.51.100.30', hostname().toLowerCase(), 'blog']])
    assert.match(wrapped.stderr, /\(combined in syslog, site blog, host \S+ \(this machine\)\)$/m)
    // Flags still win over the input's settings.
    const flags = await run(['replay', '--log', blog, '--config', c.path, '--site', 'tuning', '--host', 'h.example'])
    assert.equal(flags.code, 0, flags.stderr)
    assert.deepEqual(signals(flags.stdout), [['198.51.100.30', 'h.example', 'tuning']])
    assert.match(flags.stderr, /, with --site, --host from the command line$/m)
    const asCombined = await run(['replay', '--log', shop, '--config', c.path, '--format', 'combined'])
    assert.equal(asCombined.code, 0, asCombined.stderr)
    assert.match(asCombined.stderr, /^replay: 0 lines parsed, 3 unmatched, 0 signals$/m)
    // A copy elsewhere, with two inputs to choose from: which one is not guessed.
    const copy = join(logDir.path, 'copy.log')
    writeFileSync(copy, readFileSync(blog))
    const open = await run(['replay', '--log', copy, '--config', c.path])
    assert.equal(open.code, 2, open.stderr)
    assert.equal(
      open.stderr,
      `websignal: --format: required: ${copy} is not one of the config's inputs (${shop}, ${blog}) nor a rotated name of one\n`,
    )
    const named = await run(['replay', '--log', copy, '--config', c.path, '--format', 'combined', '--syslog'])
    assert.equal(named.code, 0, named.stderr)
    assert.deepEqual(signals(named.stdout), [['198.51.100.30', 'replay', 'replay']])
    assert.doesNotMatch(named.stderr, /read as the input/)
    // With one input, a copy taken elsewhere is read as that input.
    const one = writeConfig({
      inputs: [{ path: blog, format: 'combined', syslog: true, site: 'blog', host: 'b.example' }],
    })
    const single = await run(['replay', '--log', copy, '--config', one.path])
    assert.equal(single.code, 0, single.stderr)
    assert.deepEqual(signals(single.stdout), [['198.51.100.30', 'b.example', 'blog']])
    one.dir.remove()
    // Without --config the format is still required.
    const bare = await run(['replay', '--log', copy])
    assert.equal(bare.code, 2)
    assert.equal(bare.stderr, 'websignal: --format: required (or --config with the input this log belongs to)\n')
  } finally {
    c.dir.remove()
  }
})

test('status words the lease only where there is one to hold', async () => {
  const { formatStatus } = await import('../src/cli/status.ts')
  const base = {
    config: '/etc/gatehouse/websignal.json',
    agent: {
      listen: '127.0.0.1:9466',
      running: true,
      ready: true,
      failing: {},
      publisher: true,
      publish_failing: null as { since: string; cause: string } | null,
      newest_line: new Date(Date.now() - 5000).toISOString(),
      outbox: 3,
      signals_published: 12,
      signals_dropped: 0,
      store_failures: 1,
    },
    inputs: [],
    positions_error: null,
    positions_saved_at: null,
    store: 'redis:6379, namespace web',
    control_plane: 'https://cp.example:8443 as web-1',
    shadow: false,
  }
  const text = formatStatus(base)
  assert.match(text, /^agent: running on 127\.0\.0\.1:9466, ready, publishing \(holds the lease\)$/m)
  assert.match(
    text,
    /newest line: .* \(5 s ago\); signals waiting: 3, published since start: 12, dropped: 0; store failures: 1/,
  )
  assert.match(text, /^control plane: https:\/\/cp\.example:8443 as web-1$/m)
  const failing = formatStatus({
    ...base,
    agent: {
      ...base.agent,
      publish_failing: {
        since: new Date(Date.now() - 180_000).toISOString(),
        cause: 'the control plane refused (401)',
      },
    },
  })
  assert.match(failing, /^agent: running on 127\.0\.0\.1:9466, ready, publishing fails \(holds the lease\)$/m)
  assert.match(
    failing,
    /^ {2}signals do not reach the control plane since .* \(3 min ago\): the control plane refused \(401\)$/m,
  )
  const standby = formatStatus({ ...base, agent: { ...base.agent, publisher: false } })
  assert.match(standby, /standing by \(another instance holds the lease, or none does yet\)/)
  const shadow = formatStatus({ ...base, shadow: true })
  assert.doesNotMatch(shadow, /lease/)
  assert.match(shadow, /^shadow mode: nothing is published$/m)
})

test('status: a rotated file renamed back to the log while the agent was stopped is behind by what it has not read, not whole', async () => {
  const { websignalStatus } = await import('../src/cli/status.ts')
  const dir = join(logDir.path, 'status-back')
  mkdirSync(dir)
  const log = join(dir, 'access.log')
  const aside = join(dir, 'access.log.new')
  writeFileSync(log, 'read 1\nread 2\nnot yet\n')
  writeFileSync(aside, 'new\n')
  const st = statSync(log)
  const other = statSync(aside)
  const c = writeConfig({
    listen: `127.0.0.1:${await freePort()}`,
    inputs: [{ path: log, format: 'combined', site: 'main' }],
  })
  try {
    // What the agent saved: the new file current, the old one drained as access.log.1, since
    // renamed back to access.log.
    new OffsetFile(join(c.dir.path, 'state')).save({
      [log]: {
        dev: other.dev,
        ino: other.ino,
        offset: 4,
        draining: [{ dev: st.dev, ino: st.ino, offset: 'read 1\nread 2\n'.length, path: `${log}.1` }],
      },
    })
    const s = await websignalStatus(c.load())
    assert.deepEqual(
      [s.inputs[0]?.state, s.inputs[0]?.position, s.inputs[0]?.behind, s.inputs[0]?.draining],
      ['behind', 'read 1\nread 2\n'.length, 'not yet\n'.length, []],
    )
  } finally {
    c.dir.remove()
  }
})

test('status: a running agent a tick ahead of its saved position is reading, not behind', async () => {
  const { formatStatus } = await import('../src/cli/status.ts')
  const now = Date.now()
  const input = {
    path: '/var/log/nginx/access.log',
    site: 'main',
    format: 'combined',
    size: 3072,
    position: 2048,
    behind: 1024,
    state: 'behind' as const,
    draining: [{ path: '/var/log/nginx/access.log.1', behind: 0 }],
  }
  const base = {
    config: '/etc/gatehouse/websignal.json',
    agent: {
      listen: '127.0.0.1:9466',
      running: true,
      ready: true,
      failing: {},
      publisher: null,
      publish_failing: null,
      newest_line: null,
      outbox: 0,
      signals_published: 0,
      signals_dropped: 0,
      store_failures: 0,
    },
    inputs: [input],
    positions_error: null,
    positions_saved_at: new Date(now - 1000).toISOString(),
    store: 'redis:6379, namespace web',
    control_plane: null,
    shadow: false,
  }
  assert.match(
    formatStatus(base, now),
    /^input \/var\/log\/nginx\/access\.log \(site main, combined\): reading: 1\.0 KiB written since the position saved 1 s ago \(at 2\.0 KiB of 3\.0 KiB\)$/m,
  )
  assert.match(
    formatStatus(base, now),
    /^ {2}rotated file \/var\/log\/nginx\/access\.log\.1 still read until the server reopens its log: caught up$/m,
  )
  const stopped = formatStatus({ ...base, agent: { ...base.agent, running: false } }, now)
  assert.match(stopped, /: 1\.0 KiB behind \(at 2\.0 KiB of 3\.0 KiB\), position saved 1 s ago$/m)
  const stale = formatStatus({ ...base, positions_saved_at: new Date(now - 600_000).toISOString() }, now)
  assert.match(stale, /: 1\.0 KiB behind \(at 2\.0 KiB of 3\.0 KiB\), position saved 10 min ago$/m)
})
