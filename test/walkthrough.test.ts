/**
 * The walkthrough a new user makes: start the stack as `npm start` does, paste every command it
 * prints (`$ ...` lines) into a clean shell whose first `node` is the system one (older than
 * 24), and follow each app through its main job: gate an SSH client and approve it, read the
 * control plane, publish a site, post and read a notification, query DNS, find a scanner in an
 * access log and see it on the control plane, gate a TLS client by its fingerprint. The SSH client is
 * approved by clicking in the edgegate dashboard (Chromium), as the printed note suggests.
 *
 * The stack runs with its state in a temporary GATEHOUSE_HOME and every port shifted by
 * GATEHOUSE_PORT_OFFSET, so it does not meet a demo already running on this machine; each pasted
 * command follows the line the stack prints for that (`cd <repo> && export GATEHOUSE_HOME=...`).
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { isIP } from 'node:net'
import { tmpdir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { after, before, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'

const root = join(import.meta.dirname, '..')
const BASE_PORTS = [2200, 2222, 8053, 8054, 8055, 8056, 8057, 8443, 8444, 8445, 8480, 9122, 9123, 9466, 18100, 18109]
// A shift that keeps every port below the ephemeral range (where other tests bind port 0) and
// off the default ports of a demo that may be running.
const offsets = Array.from({ length: 13 }, (_, i) => (i + 1) * 1000 + 500).filter((o) =>
  BASE_PORTS.every((p) => !BASE_PORTS.includes(p + o)),
)
const OFFSET = offsets[Math.floor(Math.random() * offsets.length)]!
const port = (base: number) => base + OFFSET

let home: string
let stack: ChildProcess
let output = ''
let commands: string[] = []

function cleanEnv(): Record<string, string> {
  return { PATH: '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8' }
}

/** The line the stack prints first for a shell to reach it (its GATEHOUSE_HOME). */
function setupLine(): string {
  const line = commands.find((c) => c.includes('export GATEHOUSE_HOME='))
  assert.ok(line, `the stack printed no export GATEHOUSE_HOME line:\n${output}`)
  return line
}

/** Run one pasted line in /bin/sh from the repository root. */
function paste(line: string) {
  const r = spawnSync('/bin/sh', ['-c', `${setupLine()} && ${line}`], {
    cwd: root,
    env: cleanEnv(),
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

function printed(prefix: string): string[] {
  const found = commands.filter((c) => c.startsWith(prefix))
  assert.ok(found.length > 0, `the stack printed no command starting with ${prefix}:\n${output}`)
  return found
}

/** Poll `check` until it returns a value, at most `ms`: the stack works on its own clock (gate sync). */
async function eventually<T>(
  what: string,
  ms: number,
  check: () => T | undefined | Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms / 1000} s`)
    await delay(250)
  }
}

before(async () => {
  home = mkdtempSync(join(tmpdir(), 'gatehouse-walkthrough-'))
  stack = spawn(process.execPath, [join(root, 'scripts', 'stack.ts')], {
    cwd: root,
    env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_PORT_OFFSET: String(OFFSET) },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own, as a terminal gives `npm start`: the last test's Ctrl-C
    // reaches every service at once, as a user's does.
    detached: true,
  })
  stack.stdout!.on('data', (c: Buffer) => {
    output += c.toString()
  })
  stack.stderr!.on('data', (c: Buffer) => {
    output += c.toString()
  })
  const exited = new Promise((r) => stack.once('exit', r))
  await Promise.race([
    eventually('the stack start', 100_000, () => (output.includes('Press Ctrl-C to stop.') ? true : undefined)),
    exited.then(() => {
      throw new Error(`the stack exited during startup:\n${output}`)
    }),
  ])
  commands = output
    .split('\n')
    .map((l) => /^\s+\$ (.+)$/.exec(l)?.[1])
    .filter((c): c is string => c !== undefined)
})

after(async () => {
  if (stack && stack.exitCode === null) {
    const exited = new Promise((r) => stack.once('exit', r))
    stack.kill('SIGTERM')
    await exited
  }
  if (home) rmSync(home, { recursive: true, force: true })
})

test('every app started, and the printed commands use the launchers, never node apps/...', () => {
  assert.doesNotMatch(output, /FAILED to start|did not start/, output)
  for (const app of ['edgegate', 'sshproxy', 'artsvc', 'dnsctl', 'notify']) {
    assert.match(output, new RegExp(`^  ${app}$`, 'm'), `${app} is listed`)
  }
  assert.ok(commands.length >= 8, output)
  for (const c of commands) assert.doesNotMatch(c, /node apps\/|node_modules\/\.bin/, c)
  assert.ok(commands.some((c) => c.startsWith('bin/')))
})

test('edgegate: the printed commands reach the running server and its database', () => {
  for (const line of printed('curl --cacert')) {
    const r = paste(`${line} --fail --silent --show-error`)
    assert.equal(r.status, 0, `${line}\n${r.stderr}`)
  }
  const nodes = paste(printed('bin/edgegate node list')[0]!)
  assert.equal(nodes.status, 0, nodes.stderr)
  // The stack registered sshgate-1 in the server's database and the gate has synced since.
  assert.match(nodes.stdout, /^sshgate-1\s+sshgate\s+active/m)
  const admins = paste(printed('bin/edgegate admin list')[0]!)
  assert.equal(admins.status, 0, admins.stderr)
  assert.match(admins.stdout, /admin/)
  // The stack's serve has a control socket, named in the config file status reads: no TLS asked.
  const status = paste(printed('bin/edgegate status')[0]!)
  assert.equal(status.status, 0, status.stderr)
  assert.match(
    status.stdout,
    /^server: answering at https:\/\/127\.0\.0\.1:\d+ \(\/readyz 200, ready; .*; asked on the control socket \S+control\.sock\)$/m,
  )
})

test('sshproxy: a new SSH client is stopped, listed, approved on the control plane, then let through', async () => {
  const ssh = printed('ssh -p ')[0]!
  const first = paste(`${ssh} </dev/null`)
  assert.notEqual(first.status, 0, 'an unknown client is stopped')
  assert.doesNotMatch(first.stdout, /SSH gate let you through/)
  // The gate records the fingerprint after it has answered the client: poll the printed list.
  let listed = ''
  const fingerprint = await eventually('the stopped client listed as new', 30_000, () => {
    const list = paste(printed('bin/sshproxy list')[0]!)
    assert.equal(list.status, 0, list.stderr)
    listed = list.stdout
    return /^([0-9a-f]{32})\s+new\b/m.exec(list.stdout)?.[1]
  }).catch((err: Error) => assert.fail(`${err.message}:\n${listed}`))

  // It reaches the edgegate dashboard's data through the gate's sync.
  const { adminToken } = (await import(join(home, 'edgegate', 'credentials.json'), { with: { type: 'json' } }))
    .default as { adminToken: string }
  const ca = join(home, 'edgegate', 'tls', 'ca.crt')
  const api = `https://127.0.0.1:${port(8443)}/api/fingerprints?instance_id=sshgate-1`
  await eventually('the fingerprint on the control plane', 30_000, () => {
    const r = paste(`curl --fail --silent --cacert ${ca} -H "Authorization: Bearer ${adminToken}" "${api}"`)
    return r.status === 0 && r.stdout.includes(fingerprint) ? true : undefined
  })

  // Approve it as the printed note says: on the edgegate dashboard, signed in with the
  // administrator token the stack printed, by clicking Approve on the fingerprint's row.
  await approveOnDashboard(`https://127.0.0.1:${port(8443)}/`, adminToken, 'sshgate-1', fingerprint)
  // The gate pulls the approval on its next sync (every 5 s in the demo).
  const through = await eventually('the approved client getting through', 30_000, () => {
    const r = paste(`${ssh} </dev/null`)
    return r.status === 0 ? r : undefined
  })
  assert.match(through.stdout, /the SSH gate let you through/)
  // The printed CLI alternative works on the same decision (approving again keeps it approved).
  const approve = paste(printed('bin/edgegate decision approve')[0]!.replace('<fingerprint>', fingerprint))
  assert.equal(approve.status, 0, approve.stderr)
  assert.match(approve.stdout, new RegExp(`${fingerprint} approved`))
  // The printed status: the running gate's results and its sync, from the stack's config file.
  const status = paste(printed('bin/sshproxy status')[0]!)
  assert.equal(status.status, 0, status.stderr)
  assert.match(status.stdout, /^gate: running; connections since it started: .+/m)
  assert.match(status.stdout, /^fingerprints: 1 stored of at most \d+: 1 approved/m)
  assert.match(
    status.stdout,
    /^control plane: https:\/\/127\.0\.0\.1:\d+ as sshgate-1; last upload acknowledged \d{4}-/m,
  )
})

/**
 * Sign in to the dashboard in Chromium and click Approve on the fingerprint's row; a screenshot
 * of the page after the click goes to test-output/. The demo's certificate comes from the
 * stack's own CA, which this browser does not trust (a user imports tls/ca.crt or clicks
 * through): its HTTPS errors are ignored.
 */
async function approveOnDashboard(url: string, token: string, instance: string, fingerprint: string) {
  const { launchChromium } = await import('@gatehouse/testkit')
  const browser = await launchChromium()
  try {
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1366, height: 900 } })
    const page = await context.newPage()
    await page.goto(url)
    await page.locator('input[name=token]').fill(token)
    await page.locator('input[name=token]').press('Enter')
    const row = page.locator(`#fingerprints tr[data-instance="${instance}"][data-fingerprint="${fingerprint}"]`)
    await row.waitFor({ timeout: 30_000 })
    await row.locator('button[data-status=approved]').click()
    // The page reloads after the decision is stored; the row then shows it.
    await page.waitForFunction(
      ([i, f]) =>
        document
          .querySelector(`#fingerprints tr[data-instance="${i}"][data-fingerprint="${f}"]`)
          ?.textContent?.includes('approved') === true,
      [instance, fingerprint],
      { timeout: 15_000 },
    )
    mkdirSync(join(root, 'test-output'), { recursive: true })
    await page.screenshot({ path: join(root, 'test-output', 'walkthrough-dashboard-approved.png'), fullPage: true })
  } finally {
    await browser.close()
  }
}

test('artsvc: the printed publish command publishes the demo site and the URL serves it', async () => {
  const r = paste(printed('ARTSVC_URL=')[0]!)
  assert.equal(r.status, 0, r.stderr)
  const url = r.stdout.trim()
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/a\//)
  assert.match(r.stderr, /published version 1/)
  // The artifact page answers (the viewer asks a browser to sign in; the page itself exists).
  const page = await fetch(url, { redirect: 'manual' })
  assert.ok(page.status < 500, `GET ${url}: ${page.status}`)

  // The printed backup finds the running instance's database through the config file the stack
  // wrote, and the copy holds what was just published.
  const backup = paste(printed('bin/artsvc backup ')[0]!)
  assert.equal(backup.status, 0, backup.stderr)
  assert.match(
    backup.stdout,
    /^backed up to .*backup-\d{8}-\d{6}\.db \(.* MiB, checked\); now copy objects\/ and manifests\//,
  )
  const copy = backup.stdout.match(/^backed up to (\S+)/m)![1]!
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(isAbsolute(copy) ? copy : join(root, copy), { readOnly: true })
  try {
    assert.deepEqual(
      db
        .prepare('SELECT title FROM artifacts')
        .all()
        .map((r) => r.title),
      ['Demo'],
    )
  } finally {
    db.close()
  }
})

test('notify: the printed hook command posts a message that the printed reader-token command reads', () => {
  const r = paste(printed("curl -H 'Title: Demo'")[0]!)
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, 'ok')
  const read = paste(`${printed('curl -H "Authorization: Bearer $(cat ')[0]!} --fail --silent --show-error`)
  assert.equal(read.status, 0, read.stderr)
  const items = (JSON.parse(read.stdout) as { notifications: { title: string; body: string; severity: string }[] })
    .notifications
  assert.ok(
    items.some((i) => i.title === 'Demo' && i.body === 'hello from the demo' && i.severity === 'error'),
    read.stdout,
  )
  // The admin CLI finds the stack's database through the config file bin/notify reads.
  const tokens = paste(printed('bin/notify token list')[0]!)
  assert.equal(tokens.status, 0, tokens.stderr)
  assert.match(tokens.stdout, /^ID +USER +NAME/)
  assert.match(tokens.stdout, /admin +npm start demo/)
})

test('dnsctl: the printed API and DNS commands answer for the example zone', () => {
  const rrsets = paste(printed('curl -s ')[0]!)
  assert.equal(rrsets.status, 0, rrsets.stderr)
  assert.match(rrsets.stdout, /192\.0\.2\.10/)
  const dig = paste(printed('kdig ')[0]!)
  assert.equal(dig.status, 0, dig.stderr)
  assert.match(dig.stdout, /192\.0\.2\.10/)
})

test('websignal: the printed replay finds the sample scanner, and the agent publishes it to edgegate', async () => {
  const replay = paste(printed('bin/websignal replay')[0]!)
  assert.equal(replay.status, 0, replay.stderr)
  const signals = replay.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { ip: string; site: string; reasons?: unknown })
  assert.ok(signals.length > 0, `replay printed no signal:\n${replay.stdout}`)
  // The running agent tails the same log and publishes to the control plane (every 5 s a scanner).
  const { adminToken } = (await import(join(home, 'edgegate', 'credentials.json'), { with: { type: 'json' } }))
    .default as { adminToken: string }
  const ca = join(home, 'edgegate', 'tls', 'ca.crt')
  const api = `https://127.0.0.1:${port(8443)}/api/signals?limit=10`
  const published = await eventually('a websignal signal on the control plane', 60_000, () => {
    const r = paste(`curl --fail --silent --cacert ${ca} -H "Authorization: Bearer ${adminToken}" "${api}"`)
    if (r.status !== 0) return undefined
    const rows = (JSON.parse(r.stdout) as { signals: { site: string; ip: string }[] }).signals
    return rows.find((row) => row.site === 'demo')
  })
  // The sample writer adds a new scanner address every 5 s, so the agent's newest signal need not
  // be in the replay of a moment ago; both are scanner signals of the same log.
  assert.ok(isIP(published.ip) !== 0, JSON.stringify(published))
  assert.ok(
    signals.every((sig) => isIP(sig.ip) !== 0),
    replay.stdout,
  )
})

test('tlsgate: the printed curl goes through, the printed list shows its fingerprint, and blocking it refuses the next', async () => {
  const curl = printed('curl -k https://localhost:')[0]!
  const first = paste(`${curl} --silent --show-error --max-time 10`)
  assert.equal(first.status, 0, first.stderr)
  let listed = ''
  const fingerprint = await eventually('the curl fingerprint listed', 30_000, () => {
    const list = paste(`${printed('bin/tlsgate list')[0]!} --json`)
    assert.equal(list.status, 0, list.stderr)
    listed = list.stdout
    // websignal's demo traffic goes through the gate from other loopback addresses: curl's
    // fingerprint is the one from 127.0.0.1, as the stack's note says.
    const rows = JSON.parse(list.stdout) as { fingerprint: string; ips: string[] }[]
    return rows.find((r) => r.ips.includes('127.0.0.1'))?.fingerprint
  }).catch((err: Error) => assert.fail(`${err.message}:\n${listed}`))
  const block = paste(printed('bin/tlsgate block')[0]!.replace('<fingerprint>', fingerprint))
  assert.equal(block.status, 0, block.stderr)
  // The gate refuses the blocked client during the handshake, before nginx sees a request.
  const refused = await eventually('the blocked client refused', 30_000, () => {
    const r = paste(`${curl} --silent --show-error --max-time 10`)
    return r.status !== 0 ? r : undefined
  })
  assert.match(refused.stderr, /SSL|TLS|alert|handshake|reset/i)
  const status = paste(printed('bin/tlsgate status')[0]!)
  assert.equal(status.status, 0, status.stderr)
  assert.match(status.stdout, /^gate: running; connections since it started: .+/m)
  // curl's, and the demo visitors' and, once it has come, the scanner's (websignal's stack):
  // only curl's is blocked.
  assert.match(status.stdout, /^fingerprints: [23] stored of at most \d+: 0 approved, 1 blocked/m)
})

test('a second stack on the same ports stops at once with one line per app naming the port', async () => {
  const other = mkdtempSync(join(tmpdir(), 'gatehouse-walkthrough-2-'))
  try {
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'stack.ts')], {
      cwd: root,
      env: { ...process.env, GATEHOUSE_HOME: other, GATEHOUSE_PORT_OFFSET: String(OFFSET) },
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(r.status, 1, r.stdout + r.stderr)
    const expected: [string, string, number][] = [
      ['edgegate', 'HTTPS', 8443],
      ['sshproxy', 'SSH gate', 2222],
      ['tlsgate', 'TLS gate', 8444],
      ['artsvc', 'HTTP', 18100],
      ['dnsctl', 'API', 8053],
      ['notify', 'HTTP', 8480],
    ]
    for (const [app, what, base] of expected) {
      const line = `[${app}] did not start: ${app}: ${what} port 127.0.0.1:${port(base)} is already in use by another process (a stack still running, or another service)`
      assert.ok(r.stdout.split('\n').includes(line), `missing: ${line}\n${r.stdout}`)
    }
    assert.match(r.stdout, /No app started; exiting\./)
  } finally {
    rmSync(other, { recursive: true, force: true })
  }
})

test('every HTTP app serves /docs over its OpenAPI document with the version from package.json', async () => {
  const ca = join(home, 'edgegate', 'tls', 'ca.crt')
  const bases = [
    `https://127.0.0.1:${port(8443)}`,
    `http://127.0.0.1:${port(18100)}`,
    `http://127.0.0.1:${port(8053)}`,
    `http://127.0.0.1:${port(8480)}`,
  ]
  for (const base of bases) {
    const page = paste(`curl --fail --silent --show-error --location --cacert ${ca} ${base}/docs`)
    assert.equal(page.status, 0, `${base}/docs: ${page.stderr}`)
    assert.match(page.stdout, /swagger-ui-bundle\.js/)
    const doc = paste(`curl --fail --silent --show-error --cacert ${ca} ${base}/openapi.json`)
    assert.equal(doc.status, 0, `${base}/openapi.json: ${doc.stderr}`)
    const document = JSON.parse(doc.stdout) as {
      info: { version: string }
      paths: Record<string, Record<string, { security?: unknown[]; summary?: string }>>
    }
    assert.equal(document.info.version, '0.1.0')
    if (base.endsWith(String(port(8480)))) assert.ok(document.paths['/hooks/{token}'], 'notify documents its hook')
    // Every API operation says what it does, and how it is authenticated ([] when public);
    // dnsctl's API has no authentication (loopback and its Host guard).
    const api = Object.entries(document.paths).filter(([path]) => /^\/(api|v1)\//.test(path))
    assert.ok(api.length > 5, `${base} documents its API`)
    const unauthenticated = base.endsWith(String(port(8053)))
    for (const [path, operations] of api) {
      for (const [method, operation] of Object.entries(operations)) {
        const what = `${base} ${method.toUpperCase()} ${path}`
        assert.ok(operation.summary?.trim(), `${what} has a summary`)
        if (!unauthenticated) assert.ok(Array.isArray(operation.security), `${what} names its security`)
      }
    }
  }
})

// Last: it ends the stack.
test('a service killed while the stack runs is named with its log, and Ctrl-C still stops the rest', async () => {
  // notify is a child of the stack process itself (not of another stack on this machine).
  const found = spawnSync('pgrep', ['-P', String(stack.pid), '-f', 'apps/notify/src/main.ts serve'], {
    encoding: 'utf8',
  })
  const pid = Number(found.stdout.trim().split('\n')[0])
  assert.ok(pid > 0, `notify's process under the stack: ${found.stdout}${found.stderr}`)
  process.kill(pid, 'SIGKILL')
  await eventually('the notice', 10_000, () =>
    /^\[notify\] notify was killed by SIGKILL while the stack ran; see .*notify\.log$/m.test(output) ? true : undefined,
  )
  const exited = new Promise<number | null>((r) => stack.once('exit', (code) => r(code)))
  // Ctrl-C in a terminal: SIGINT to the whole process group, the services as well as the stack.
  process.kill(-stack.pid!, 'SIGINT')
  // Stopping used to wait forever for the killed child's 'exit', which had already happened.
  const code = await Promise.race([exited, delay(60_000).then(() => 'hung' as const)])
  assert.equal(code, 0, output.slice(-2000))
  for (const app of ['notify', 'dnsctl', 'edgegate']) assert.match(output, new RegExp(`^stopped ${app}$`, 'm'))
  // The services exit on the Ctrl-C they got too: a normal stop, not reported as a crash.
  const stopping = output.slice(output.indexOf('stopping (Ctrl-C again'))
  assert.doesNotMatch(stopping, /while the stack ran/, stopping)
})
