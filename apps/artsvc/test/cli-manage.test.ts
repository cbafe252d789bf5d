/** The artsvc management commands (login, list, open, share) against a real server. */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { after, before, test } from 'node:test'
import { type OidcProvider, startOidcProvider, tempDir } from '@gatehouse/testkit'
import { credentialsFile, list, login, open, shareCreate, shareList, shareRevoke } from '../src/cli/manage.ts'
import { publish } from '../src/cli/publish.ts'
import { AUDIENCE, type Harness, SCOPE, startArtsvc } from './helpers/harness.ts'

let op: OidcProvider
let h: Harness
const dir = tempDir('artsvc-manage-')
const env = { HOME: dir.path }
let artifact: string

before(async () => {
  op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
  h = await startArtsvc({ op })
  const site = join(dir.path, 'site')
  mkdirSync(site)
  writeFileSync(join(site, 'index.html'), '<!doctype html><title>managed</title>')
  const token = await op.clientCredentialsToken(SCOPE)
  const sink = { write: () => true } as unknown as NodeJS.WriteStream
  const url = await publish(
    { url: h.base, token, title: 'Managed', zip: site, entrypoint: 'index.html', progress: 'never' } as never,
    sink,
    false,
  )
  artifact = url.split('/a/')[1]!
})
after(async () => {
  await h?.close()
  await op?.stop()
  dir.remove()
})

test('login checks the token, then keeps it per origin in an owner-only file', async () => {
  await assert.rejects(login({ url: h.base, token: 'not-a-token', env }), /HTTP 401 token_invalid/)
  const token = await op.clientCredentialsToken(SCOPE)
  const out = await login({ url: h.base, token, env })
  const file = credentialsFile(env)
  assert.equal(file, join(dir.path, '.config', 'gatehouse', 'artsvc.json'))
  assert.match(out.lines[0]!, /^logged in to http:\/\/127\.0\.0\.1:\d+ /)
  assert.equal(statSync(file).mode & 0o777, 0o600)
  assert.equal(statSync(join(dir.path, '.config', 'gatehouse')).mode & 0o777, 0o700)
  assert.equal(JSON.parse(readFileSync(file, 'utf8'))[new URL(h.base).origin].token, token)
})

test('list and open use the stored token; list prints a table with a header and --json the objects', async () => {
  const out = await list({ url: h.base, env })
  assert.match(out.lines[0]!, /^ID\s+TITLE\s+VERSION\s+UPDATED\s+ROLE\s+URL$/)
  assert.ok(out.lines.some((l) => l.startsWith(artifact) && l.includes('Managed')))
  const items = out.json as { id: string; latest_version: number }[]
  assert.equal(items.find((a) => a.id === artifact)?.latest_version, 1)
  const opened = await open({ url: h.base, env, artifact })
  assert.deepEqual(opened.lines, [`${h.base}/a/${artifact}`])
  // Someone who can see nothing yet reads that, with the command that publishes.
  const newcomer = await list({ url: h.base, env, token: await op.mintAccessToken({ sub: 'newcomer' }) })
  assert.deepEqual(
    [newcomer.lines, newcomer.json],
    [['no artifacts you can see yet: artsvc publish --title TITLE --zip DIR publishes one'], []],
  )
})

test('share create, list and revoke; no share links yet says so', async () => {
  const none = await shareList({ url: h.base, env, artifact })
  assert.deepEqual([none.lines, none.json], [[`no share links yet: artsvc share create ${artifact} makes one`], []])
  const created = await shareCreate({ url: h.base, env, artifact, label: 'for review' })
  const share = created.json as { id: string; url: string }
  assert.match(created.lines[0]!, /^http:\/\/.+/)
  const listed = await shareList({ url: h.base, env, artifact })
  assert.ok(
    listed.lines.some((l) => l.startsWith(share.id) && /active/.test(l) && l.endsWith('for review')),
    listed.lines.join('\n'),
  )
  await shareRevoke({ url: h.base, env, artifact, share: share.id })
  const after = (await shareList({ url: h.base, env, artifact })).json as { id: string; status: string }[]
  assert.equal(after.find((s) => s.id === share.id)?.status, 'revoked')
})

test('without a stored or given token the commands say how to log in', async () => {
  await assert.rejects(
    list({ url: h.base, env: { HOME: join(dir.path, 'nobody') } }),
    /not logged in to .*: run artsvc login or set ARTSVC_TOKEN/,
  )
})

test('the commands from the command line: login, list --json, share create|list|revoke, exit codes', async () => {
  const main = join(import.meta.dirname, '..', 'src', 'main.ts')
  const home = join(dir.path, 'cli-home')
  mkdirSync(home)
  // Asynchronous: the server runs in this process and must keep answering.
  const cli = (args: string[], extra: Record<string, string> = {}) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [main, ...args],
        { env: { PATH: process.env.PATH ?? '', HOME: home, ARTSVC_URL: h.base, ...extra } },
        (err, stdout, stderr) =>
          resolve({ status: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
    })
  const notLoggedIn = await cli(['list'])
  assert.equal(notLoggedIn.status, 1)
  assert.match(notLoggedIn.stderr, /^artsvc: not logged in to .*: run artsvc login or set ARTSVC_TOKEN\n$/)
  assert.equal((await cli(['list', '--url', 'not a url'])).status, 2)
  assert.equal((await cli(['login'])).status, 2, 'no token given is a usage error')

  const token = await op.clientCredentialsToken(SCOPE)
  const logged = await cli(['login'], { ARTSVC_TOKEN: token })
  assert.equal(logged.status, 0, logged.stderr)
  assert.match(logged.stdout, /^logged in to /)

  const listed = await cli(['list', '--json'])
  assert.equal(listed.status, 0, listed.stderr)
  assert.ok((JSON.parse(listed.stdout) as { id: string }[]).some((a) => a.id === artifact))
  const table = await cli(['list'])
  assert.match(table.stdout, /^ID\s+TITLE/)

  const created = await cli(['share', 'create', artifact, '--label', 'cli', '--max-views', '3', '--json'])
  assert.equal(created.status, 0, created.stderr)
  const share = JSON.parse(created.stdout) as { id: string }
  assert.equal((await cli(['share', 'create', artifact, '--max-views', 'many'])).status, 2)
  // The view limit beside the count, as on the web page.
  assert.match((await cli(['share', 'list', artifact])).stdout, new RegExp(`^${share.id}\\s+active\\s+0/3\\s`, 'm'))
  const revoked = await cli(['share', 'revoke', artifact, share.id])
  assert.equal(revoked.status, 0, revoked.stderr)
  assert.equal(revoked.stdout, `revoked ${share.id}\n`)

  // A label is anyone's text: the table and --json print its controls and bidirectional
  // overrides as escapes (the ESC of a colour, a C1 CSI, a right-to-left override), and
  // --json still reads back as the label itself.
  const label = 'x\u001b[2J\u009b31m\u202eevil'
  const marked = await cli(['share', 'create', artifact, '--label', label, '--json'])
  assert.equal(marked.status, 0, marked.stderr)
  const markedId = (JSON.parse(marked.stdout) as { id: string }).id
  const raw = /[\u001b\u009b\u202e]/
  const plainList = await cli(['share', 'list', artifact])
  assert.doesNotMatch(plainList.stdout, raw)
  assert.match(
    plainList.stdout,
    new RegExp(`^${markedId}\\s+active\\s+0\\s+-\\s+x\\\\e\\[2J\\\\x9b31m\\\\u202eevil$`, 'm'),
  )
  const jsonList = await cli(['share', 'list', artifact, '--json'])
  assert.doesNotMatch(jsonList.stdout, raw)
  assert.equal(
    (JSON.parse(jsonList.stdout) as { id: string; label: string }[]).find((s) => s.id === markedId)?.label,
    label,
  )
  assert.equal((await cli(['share', 'revoke', artifact, markedId])).status, 0)

  // A share for a while: --expires-in counts from now; a bad time is a usage error and creates nothing.
  const before = Date.now()
  const week = await cli(['share', 'create', artifact, '--expires-in', '168h', '--json'])
  assert.equal(week.status, 0, week.stderr)
  const weekAt = Date.parse((JSON.parse(week.stdout) as { expires_at: string }).expires_at)
  const weekMs = 168 * 3_600_000
  assert.ok(weekAt >= before + weekMs - 1000 && weekAt <= Date.now() + weekMs, `${weekAt}`)
  const at = await cli(['share', 'create', artifact, '--expires-at', '2099-01-31T00:00:00+01:00', '--json'])
  assert.equal(at.status, 0, at.stderr)
  assert.equal((JSON.parse(at.stdout) as { expires_at: string }).expires_at, '2099-01-30T23:00:00.000Z')
  const count = async () => ((await cli(['share', 'list', artifact, '--json'])).stdout.match(/"id"/g) ?? []).length
  const shares = await count()
  const refused = [
    [['--expires-at', 'tomorrow'], /^artsvc: --expires-at must be an RFC 3339 time such as .*, got "tomorrow"\n/],
    [['--expires-at', '2020-01-01T00:00:00Z'], /^artsvc: --expires-at 2020-01-01T00:00:00Z is in the past\n/],
    [['--expires-in', '7d'], /^artsvc: --expires-in: invalid duration "7d"/],
    [['--expires-in', '30s'], /^artsvc: --expires-in must be at least 1m, got "30s"\n/],
    [
      ['--expires-in', '1h', '--expires-at', '2099-01-01T00:00:00Z'],
      /^artsvc: give --expires-in or --expires-at, not both\n/,
    ],
  ] as const
  for (const [args, message] of refused) {
    const r = await cli(['share', 'create', artifact, ...args])
    assert.deepEqual([r.status, r.stdout], [2, ''], args.join(' '))
    assert.match(r.stderr, message)
  }
  assert.equal(await count(), shares, 'a refused share creates nothing')

  // A mistyped or cut id is a usage error naming it (not the API's pattern), and nothing changes.
  const badIds = [
    [['open', '../../etc'], '"../../etc" is not an artifact id'],
    [['share', 'create', artifact.slice(0, -1)], `"${artifact.slice(0, -1)}" is not an artifact id`],
    [['share', 'list', 'nosuchartifact'], '"nosuchartifact" is not an artifact id'],
    [['share', 'revoke', artifact, 'nosuchshare'], '"nosuchshare" is not a share id'],
    [
      ['publish', '--title', 'X', '--zip', join(dir.path, 'site'), '--artifact', 'nosuch'],
      '--artifact: "nosuch" is not an artifact id',
    ],
  ] as const
  for (const [args, words] of badIds) {
    const r = await cli([...args])
    assert.deepEqual([r.status, r.stdout], [2, ''], args.join(' '))
    assert.ok(r.stderr.startsWith(`artsvc: ${words} (16 letters, digits, - or _; `), r.stderr)
    assert.equal(r.stderr.split('\n').length, 2, r.stderr)
  }
  assert.equal(await count(), shares, 'a refused id creates nothing')
  const listedAfter = JSON.parse((await cli(['list', '--json'])).stdout) as { id: string; latest_version: number }[]
  assert.equal(listedAfter.find((a) => a.id === artifact)?.latest_version, 1, 'no version published')

  // The token travels with every request: plain http only to loopback, other schemes refused.
  for (const [args, extra, words] of [
    [['list', '--url', 'http://example.com'], {}, '--url "http://example.com": must use https'],
    [['list'], { ARTSVC_URL: 'http://example.com' }, 'ARTSVC_URL "http://example.com": must use https'],
    [['list', '--url', 'ftp://127.0.0.1'], {}, '--url "ftp://127.0.0.1": must use https'],
  ] as const) {
    const r = await cli([...args], extra)
    assert.equal(r.status, 2, r.stderr)
    assert.ok(r.stderr.startsWith(`artsvc: ${words} (plain http only on loopback)`), r.stderr)
  }
  // publish says the same rather than "not logged in" (no login is kept for such a URL).
  const plain = await cli(['publish', '--title', 'X', '--zip', join(dir.path, 'site'), '--url', 'http://example.com'])
  assert.equal(plain.status, 2)
  assert.match(plain.stderr, /--url: must use https \(plain http only on loopback\)/)
})

const messageOf = (message: string) => ({ name: 'PublishError', message })

test('an address that is not artsvc (a wrong --url, a proxy page, a sign-in redirect) is named with what it answered', async () => {
  // A stand-in for whatever answers at a mistaken URL.
  const other = createServer((req, res) => {
    if (req.url?.startsWith('/api/v1/artifacts/redirect')) {
      res.writeHead(302, { location: 'https://sso.example.com/login' }).end()
    } else if (req.method === 'GET' && req.url?.startsWith('/api/v1/artifacts/html')) {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>portal</title>')
    } else res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found')
  })
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
  try {
    const t = { url, token: 'x', env }
    await assert.rejects(
      list(t),
      messageOf(
        `${url}/api/v1/artifacts: HTTP 404, not an artsvc answer (text/plain): is ${url} the artsvc management URL (--url, ARTSVC_URL)?`,
      ),
    )
    await assert.rejects(
      open({ ...t, artifact: 'html' }),
      /\/api\/v1\/artifacts\/html: HTTP 200, not an artsvc answer \(text\/html\)/,
    )
    await assert.rejects(
      open({ ...t, artifact: 'redirect' }),
      /\/api\/v1\/artifacts\/redirect: HTTP 302, redirected to https:\/\/sso\.example\.com\/login \(not followed\)/,
    )
    const sink = { write: () => true } as unknown as NodeJS.WriteStream
    await assert.rejects(
      publish(
        {
          url,
          token: 'x',
          title: 'x',
          zip: join(dir.path, 'site'),
          entrypoint: 'index.html',
          progress: 'never',
        } as never,
        sink,
        false,
      ),
      messageOf(
        `${url}/api/v1/artifacts/uploads: HTTP 404, not an artsvc answer (text/plain): is ${url} the artsvc management URL (--url, ARTSVC_URL)?`,
      ),
    )
  } finally {
    other.close()
  }
})

test('stored logins that cannot be parsed are said, not replaced by one login', async () => {
  const home = join(dir.path, 'corrupt-home')
  const e = { HOME: home }
  const file = credentialsFile(e)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, '{"https://other.example.com": {"token": "kept", "refresh_token": "r"', { mode: 0o600 })
  const message = {
    message: `the stored logins in ${file} are not a JSON object: remove the file and run artsvc login again`,
  }
  await assert.rejects(list({ url: h.base, env: e }), message)
  const token = await op.clientCredentialsToken(SCOPE)
  await assert.rejects(login({ url: h.base, token, env: e }), message)
  assert.match(readFileSync(file, 'utf8'), /"token": "kept"/, 'the other login is still there')
  // Saved by replacing the file whole: nothing but the file itself is left in the folder.
  rmSync(file)
  await login({ url: h.base, token, env: e })
  assert.deepEqual(readdirSync(dirname(file)), ['artsvc.json'])
  assert.equal(statSync(file).mode & 0o777, 0o600)
})
