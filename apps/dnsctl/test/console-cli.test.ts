/**
 * `dnsctl serve --console-listen` and `dnsctl console` as real processes: the server opens the
 * console listener from its config file, the command prints a link that signs in once, bad
 * input exits 2, a server without a console exits 1 with the reason.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Child, freePort, type Knot, startKnot, tempDir } from '@gatehouse/testkit'
import { json } from './helpers.ts'
import { cli, startServe } from './processes.ts'

describe('dnsctl console (command) against dnsctl serve --console-listen', () => {
  let knot: Knot
  let server: Child
  let env: NodeJS.ProcessEnv
  let consoleBase: string
  const dir = tempDir('dnsctl-console-cli-')
  before(async () => {
    knot = await startKnot()
    const consolePort = await freePort()
    consoleBase = `http://127.0.0.1:${consolePort}`
    ;({ server, env } = await startServe(knot, dir.path, {
      console: { listen: `127.0.0.1:${consolePort}`, linkTtl: '1m' },
    }))
    // Ready once the API answers; the console listener opens right after.
    for (
      let i = 0;
      i < 100 &&
      !(await fetch(`${consoleBase}/console/`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    ) {
      await new Promise((r) => setTimeout(r, 50))
    }
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
  const { server, env } = await startServe(knot, dir.path)
  try {
    const r = await cli(['console'], env)
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
