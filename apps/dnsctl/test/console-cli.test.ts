/**
 * `dnsctl serve --console-listen` and `dnsctl console` as real processes: the server opens the
 * console listener from its config file, the command prints a link that signs in once, bad
 * input exits 2, a server without a console exits 1 with the reason.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Child, freePort, type Knot, startChild, startKnot, tempDir } from '@gatehouse/testkit'
import { json } from './helpers.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

function cli(args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end()
  })
}

describe('dnsctl console (command) against dnsctl serve --console-listen', () => {
  let knot: Knot
  let server: Child
  let env: NodeJS.ProcessEnv
  let consoleBase: string
  const dir = tempDir('dnsctl-console-cli-')
  before(async () => {
    knot = await startKnot()
    const [port, consolePort] = [await freePort(), await freePort()]
    consoleBase = `http://127.0.0.1:${consolePort}`
    const config = join(dir.path, 'dnsctl.json')
    writeFileSync(
      config,
      JSON.stringify({
        listen: `127.0.0.1:${port}`,
        console: { listen: `127.0.0.1:${consolePort}`, linkTtl: '1m' },
        stateDir: join(dir.path, 'state'),
        knot: { socket: knot.controlSocket, zonesDir: knot.zonesDir, address: `127.0.0.1:${knot.port}` },
        logLevel: 'warn',
      }),
    )
    env = { DNSCTL_CONFIG: config, DNSCTL_URL: undefined }
    server = await startChild({
      name: 'dnsctl',
      command: process.execPath,
      args: [MAIN],
      logFile: join(dir.path, 'dnsctl.log'),
      env: { ...process.env, ...env } as NodeJS.ProcessEnv,
      probe: async () => (await fetch(`${consoleBase}/console/`)).ok,
    })
  })
  after(async () => {
    await server?.stop()
    await knot?.stop()
    dir.remove()
  })

  test('prints a link that signs in once, as the given name', async () => {
    const r = await cli(['console', '--name', 'carol'], env)
    assert.equal(r.code, 0, r.stderr)
    const url = /^(http:\/\/\S+)$/m.exec(r.stdout)?.[1]
    assert.ok(url?.startsWith(`${consoleBase}/console/#code=`), r.stdout)
    assert.match(r.stdout, /as carol \(once, until \d{4}-\d\d-\d\dT/)
    const code = new URL(url!).hash.slice('#code='.length)
    const signIn = () =>
      fetch(`${consoleBase}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: consoleBase },
        body: JSON.stringify({ code }),
      })
    const first = await signIn()
    assert.equal(first.status, 200)
    assert.equal((await json(first)).name, 'carol')
    assert.equal((await signIn()).status, 401)
  })

  test('--json prints the link as JSON; a bad --name is a usage error', async () => {
    const r = await cli(['console', '--json'], { ...env, USER: 'dave' })
    assert.equal(r.code, 0, r.stderr)
    const body = JSON.parse(r.stdout)
    assert.equal(body.name, 'dave')
    assert.match(body.url, /#code=/)
    const bad = await cli(['console', '--name', 'a\tb'], env)
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /--name must be 1 to 100 printable ASCII characters/)
  })
})

test('a server without --console-listen: one line saying how to turn it on, exit 1', async () => {
  const knot = await startKnot()
  const dir = tempDir('dnsctl-console-cli-')
  const port = await freePort()
  const server = await startChild({
    name: 'dnsctl',
    command: process.execPath,
    args: [MAIN, 'serve', '--listen', `127.0.0.1:${port}`, '--state-dir', join(dir.path, 'state')],
    logFile: join(dir.path, 'dnsctl.log'),
    env: {
      ...process.env,
      DNSCTL_KNOT_SOCKET: knot.controlSocket,
      DNSCTL_KNOT_ZONES_DIR: knot.zonesDir,
      DNSCTL_KNOT_ADDRESS: `127.0.0.1:${knot.port}`,
      DNSCTL_LOG_LEVEL: 'warn',
      DNSCTL_CONFIG: undefined,
    } as NodeJS.ProcessEnv,
    probe: async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok,
  })
  try {
    const r = await cli(['console', '--url', `http://127.0.0.1:${port}`], { DNSCTL_CONFIG: undefined })
    assert.equal(r.code, 1)
    assert.equal(
      r.stderr,
      'dnsctl: the web console is not enabled: start dnsctl with --console-listen (console_disabled)\n',
    )
  } finally {
    await server.stop()
    await knot.stop()
    dir.remove()
  }
})
