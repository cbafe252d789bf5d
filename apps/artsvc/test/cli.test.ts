/** `artsvc publish` as a child process against a real server. */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { createServer as createHttpsServer, type Server } from 'node:https'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import {
  createTestCa,
  loadedPackages,
  type OidcProvider,
  startOidcProvider,
  type TestCa,
  tempDir,
} from '@gatehouse/testkit'
import { AUDIENCE, type Harness, SCOPE, startArtsvc } from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

const MAIN = new URL('../src/main.ts', import.meta.url).pathname
let op: OidcProvider
let h: Harness
const dir = tempDir('artsvc-cli-')
const zip = join(dir.path, 'site.zip')

before(async () => {
  op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
  h = await startArtsvc({ op })
  writeFileSync(zip, sampleBundle([{ name: 'big.bin', data: Buffer.alloc(300_000, 7), method: 0 }]))
})
after(async () => {
  await h?.close()
  await op?.stop()
  dir.remove()
})

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'publish', ...args],
      { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

test('publishes a ZIP, prints the artifact URL, then a new version of it', async () => {
  const token = await op.clientCredentialsToken(SCOPE)
  const env = { ARTSVC_URL: h.base, ARTSVC_TOKEN: token }
  const first = await cli(['--title', 'From CI', '--zip', zip], env)
  assert.equal(first.code, 0, first.stderr)
  const url = first.stdout.trim()
  assert.match(url, new RegExp(`^${h.base}/a/[A-Za-z0-9_-]{16}$`))
  assert.match(first.stderr, /published version 1/)
  assert.doesNotMatch(first.stderr, /\[#+/, 'no progress bar when stderr is not a terminal')
  const id = url.split('/a/')[1]!
  const second = await cli(['--title', 'From CI 2', '--zip', zip, '--artifact', id, '--progress', 'always'], env)
  assert.equal(second.code, 0, second.stderr)
  assert.equal(second.stdout.trim(), url)
  assert.match(second.stderr, /\[#{30}\] 100% /)
  assert.match(second.stderr, /published version 2/)
  const detail = (await (
    await fetch(`${h.base}/api/v1/artifacts/${id}`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as { versions: unknown[] }
  assert.equal(detail.versions.length, 2)
})

test('publishes a folder zipped on the fly; the folder is linked, so publishing it again adds a version', async () => {
  const token = await op.clientCredentialsToken(SCOPE)
  const env = { ARTSVC_URL: h.base, ARTSVC_TOKEN: token }
  const site = join(dir.path, 'site')
  mkdirSync(join(site, 'css'), { recursive: true })
  writeFileSync(
    join(site, 'index.html'),
    '<!doctype html><title>folder</title><link rel="stylesheet" href="css/a.css">',
  )
  writeFileSync(join(site, 'css', 'a.css'), 'body { color: #123 }')
  const first = await cli(['--title', 'Folder', '--zip', site], env)
  assert.equal(first.code, 0, first.stderr)
  const url = first.stdout.trim()
  const id = url.split('/a/')[1]!
  assert.deepEqual(JSON.parse(readFileSync(join(site, '.artsvc.json'), 'utf8')), { url: h.base, artifact: id })
  writeFileSync(join(site, 'index.html'), '<!doctype html><title>folder v2</title>')
  const second = await cli(['--title', 'Folder', '--zip', site], env)
  assert.equal(second.code, 0, second.stderr)
  assert.equal(second.stdout.trim(), url, 'the linked artifact got the new version')
  assert.match(second.stderr, /published version 2/)
  const detail = (await (
    await fetch(`${h.base}/api/v1/artifacts/${id}`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as { versions: { files?: unknown; file_count?: number }[] }
  assert.equal(detail.versions.length, 2)
})

test('a new version keeps the title and entrypoint unless given; a new artifact needs --title', async () => {
  const token = await op.clientCredentialsToken(SCOPE)
  const env = { ARTSVC_URL: h.base, ARTSVC_TOKEN: token }
  const site = join(dir.path, 'handbook')
  mkdirSync(site, { recursive: true })
  writeFileSync(join(site, 'home.html'), '<!doctype html><title>v1</title>')
  const count = async () =>
    (
      (await (await fetch(`${h.base}/api/v1/artifacts`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        artifacts: unknown[]
      }
    ).artifacts.length
  const before = await count()
  const untitled = await cli(['--zip', site, '--entrypoint', 'home.html'], env)
  assert.deepEqual([untitled.code, untitled.stdout], [2, ''], untitled.stderr)
  assert.match(
    untitled.stderr,
    /^artsvc: --title: required for a new artifact \(a new version, of a linked folder or --artifact, keeps the artifact's title\)\n/,
  )
  assert.equal(await count(), before, 'nothing published')

  const first = await cli(['--title', 'Handbook', '--entrypoint', 'home.html', '--zip', site], env)
  assert.equal(first.code, 0, first.stderr)
  const id = first.stdout.trim().split('/a/')[1]!
  // The linked folder again, with --zip alone: version 2 under the same title and entrypoint.
  writeFileSync(join(site, 'home.html'), '<!doctype html><title>v2</title>')
  const again = await cli(['--zip', site], env)
  assert.equal(again.code, 0, again.stderr)
  assert.match(again.stderr, /published version 2/)
  const read = async () =>
    (await (
      await fetch(`${h.base}/api/v1/artifacts/${id}`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { title: string; versions: { number: number; title: string; entrypoint: string }[] }
  assert.deepEqual(
    (await read()).versions.map((v) => [v.number, v.title, v.entrypoint]),
    [
      [2, 'Handbook', 'home.html'],
      [1, 'Handbook', 'home.html'],
    ],
  )
  // Either can still be given: a new title, with the kept entrypoint.
  const renamed = await cli(['--title', 'Team handbook', '--zip', site], env)
  assert.equal(renamed.code, 0, renamed.stderr)
  const detail = await read()
  assert.equal(detail.title, 'Team handbook')
  assert.deepEqual([detail.versions[0]!.number, detail.versions[0]!.entrypoint], [3, 'home.html'])
  assert.equal(await count(), before + 1)
})

test('a link file that is broken or names a gone artifact stops the publish, kept as it was', async () => {
  const token = await op.clientCredentialsToken(SCOPE)
  const env = { ARTSVC_URL: h.base, ARTSVC_TOKEN: token }
  const site = join(dir.path, 'linked')
  mkdirSync(site, { recursive: true })
  writeFileSync(join(site, 'index.html'), '<!doctype html><title>linked</title>')
  const link = join(site, '.artsvc.json')
  const count = async () =>
    (
      (await (await fetch(`${h.base}/api/v1/artifacts`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        artifacts: unknown[]
      }
    ).artifacts.length
  const before = await count()
  const cases = [
    [
      '{"url": "http://half',
      /^artsvc: the link file .*\.artsvc\.json is not \{"url": …, "artifact": …\}; fix it, delete it/,
    ],
    [
      JSON.stringify({ url: h.base, artifact: '../x' }),
      /^artsvc: the link file .*\.artsvc\.json names "\.\.\/x", which is not an artifact id; fix it/,
    ],
    [
      JSON.stringify({ url: h.base, artifact: 'AAAAAAAAAAAAAAAA' }),
      /^artsvc: \/api\/v1\/artifacts\/AAAAAAAAAAAAAAAA: HTTP 404 artifact_not_found: .* \(artifact AAAAAAAAAAAAAAAA, from the link file .*\.artsvc\.json: delete that file to publish a new artifact, or give --artifact\)\n$/,
    ],
  ] as const
  for (const [content, message] of cases) {
    writeFileSync(link, content)
    const r = await cli(['--title', 'Linked', '--zip', site], env)
    assert.deepEqual([r.code, r.stdout], [1, ''], r.stderr)
    assert.match(r.stderr, message)
    assert.equal(readFileSync(link, 'utf8'), content, 'the link file is left as it was')
  }
  assert.equal(await count(), before, 'no new artifact')
  // --artifact wins over a broken link file (it is not read), which then links the folder anew.
  const first = await cli(['--title', 'Linked', '--zip', join(dir.path, 'site')], env)
  const id = first.stdout.trim().split('/a/')[1]!
  writeFileSync(link, '{broken')
  const forced = await cli(['--title', 'Linked', '--zip', site, '--artifact', id], env)
  assert.equal(forced.code, 0, forced.stderr)
  assert.deepEqual(JSON.parse(readFileSync(link, 'utf8')), { url: h.base, artifact: id })
})

test('errors: usage mistakes exit 2, refused requests exit 1, one line each', async () => {
  const usage = await cli(['--title', 'x'], { ARTSVC_URL: h.base, ARTSVC_TOKEN: 't' })
  assert.equal(usage.code, 2)
  assert.match(usage.stderr, /^artsvc: zip: required/m)
  const insecure = await cli(['--title', 'x', '--zip', zip], {
    ARTSVC_URL: 'http://artifacts.example.com',
    ARTSVC_TOKEN: 't',
  })
  assert.equal(insecure.code, 2)
  const refused = await cli(['--title', 'x', '--zip', zip], { ARTSVC_URL: h.base, ARTSVC_TOKEN: 'not-a-token' })
  assert.equal(refused.code, 1)
  assert.equal(
    refused.stderr,
    'artsvc: /api/v1/artifacts/uploads: HTTP 401 token_invalid: access token rejected: ERR_JWS_INVALID\n',
  )
  const missing = await cli(['--title', 'x', '--zip', join(dir.path, 'nope.zip')], {
    ARTSVC_URL: h.base,
    ARTSVC_TOKEN: 't',
  })
  assert.equal(missing.code, 1)
  assert.equal(missing.stderr, `artsvc: cannot read ${join(dir.path, 'nope.zip')}: no such file or directory\n`)
  const device = await cli(['--title', 'x', '--zip', '/dev/null'], { ARTSVC_URL: h.base, ARTSVC_TOKEN: 't' })
  assert.deepEqual([device.code, device.stderr], [1, 'artsvc: cannot read /dev/null: not a ZIP file or a folder\n'])
  // login --token-file: an unreadable or empty file is named (it was "unexpected error: ENOENT ...").
  const login = (file: string) =>
    new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [MAIN, 'login', '--url', h.base, '--token-file', file],
        { env: { PATH: process.env.PATH ?? '', HOME: dir.path }, encoding: 'utf8' },
        (err, _out, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
      ),
    )
  const noFile = join(dir.path, 'no-token.txt')
  assert.deepEqual(await login(noFile), {
    code: 1,
    stderr: `artsvc: cannot read the token file ${noFile}: no such file or directory\n`,
  })
  const empty = join(dir.path, 'empty-token.txt')
  writeFileSync(empty, '\n')
  assert.deepEqual(await login(empty), { code: 1, stderr: `artsvc: the token file ${empty} is empty\n` })
})

test('a folder published but not linkable (its link file cannot be written) still prints its URL, with a warning', async () => {
  const token = await op.clientCredentialsToken(SCOPE)
  const env = { ARTSVC_URL: h.base, ARTSVC_TOKEN: token }
  const site = join(dir.path, 'unlinkable')
  // A folder in the way of .artsvc.json (any write failure: a read-only checkout, a full disk).
  mkdirSync(join(site, '.artsvc.json'), { recursive: true })
  writeFileSync(join(site, 'index.html'), '<!doctype html><title>unlinkable</title>')
  const r = await cli(['--title', 'Unlinkable', '--zip', site], env)
  assert.equal(r.code, 0, r.stderr)
  const url = r.stdout.trim()
  assert.match(url, new RegExp(`^${h.base}/a/[A-Za-z0-9_-]{16}$`))
  const id = url.split('/a/')[1]!
  assert.equal(
    r.stderr,
    `published version 1\nartsvc: warning: cannot link the folder to artifact ${id} (${join(site, '.artsvc.json')}: illegal operation on a directory); publish it again with --artifact ${id} to add a version\n`,
  )
})

test('through an mTLS proxy: client certificate, key and CA file from the environment', async () => {
  const ca: TestCa = createTestCa()
  const server = ca.issueServer(['127.0.0.1'])
  const client = ca.issueClient('publisher')
  // A TLS-terminating proxy that demands a client certificate, like the one in front of artsvc.
  const proxy: Server = createHttpsServer(
    { cert: server.cert, key: server.key, ca: ca.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const upstream = httpRequest(
        {
          host: '127.0.0.1',
          port: h.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: `127.0.0.1:${h.port}` },
        },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers)
          r.pipe(res)
        },
      )
      req.pipe(upstream)
    },
  )
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  try {
    const url = `https://127.0.0.1:${(proxy.address() as { port: number }).port}`
    const token = await op.clientCredentialsToken(SCOPE)
    const env = { ARTSVC_URL: url, ARTSVC_TOKEN: token, ARTSVC_CA_FILE: ca.caPath }
    const ok = await cli(['--title', 'via mTLS', '--zip', zip], {
      ...env,
      ARTSVC_CLIENT_CERT: client.certPath,
      ARTSVC_CLIENT_KEY: client.keyPath,
    })
    assert.equal(ok.code, 0, ok.stderr)
    assert.match(ok.stdout, new RegExp(`^${h.base}/a/`))
    const noCert = await cli(['--title', 'no cert', '--zip', zip], env)
    assert.equal(noCert.code, 1, noCert.stderr)
    assert.equal(noCert.stderr.split('\n').filter(Boolean).length, 1)
    const half = await cli(['--title', 'x', '--zip', zip], { ...env, ARTSVC_CLIENT_CERT: client.certPath })
    assert.equal(half.code, 2)
    // A missing or non-PEM file is named (it was "unexpected error: ENOENT ...").
    const gone = join(dir.path, 'gone.crt')
    const missingCert = await cli(['--title', 'x', '--zip', zip], {
      ...env,
      ARTSVC_CLIENT_CERT: gone,
      ARTSVC_CLIENT_KEY: client.keyPath,
    })
    assert.deepEqual(
      [missingCert.code, missingCert.stderr],
      [1, `artsvc: TLS certificate ${gone} cannot be read (ENOENT)\n`],
    )
    const notPem = await cli(['--title', 'x', '--zip', zip], { ...env, ARTSVC_CA_FILE: zip })
    assert.deepEqual([notPem.code, notPem.stderr], [1, `artsvc: TLS CA bundle ${zip} is not a PEM file\n`])
  } finally {
    proxy.closeAllConnections()
    proxy.close()
    ca.remove()
  }
})

test('without ARTSVC_TOKEN, publish uses the token artsvc login kept for the URL; with none it says how to log in', async () => {
  const home = join(dir.path, 'home')
  mkdirSync(home)
  const token = await op.clientCredentialsToken(SCOPE)
  const login = await new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'login', '--url', h.base],
      { env: { PATH: process.env.PATH ?? '', HOME: home, ARTSVC_TOKEN: token }, encoding: 'utf8' },
      (err, _out, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    )
  })
  assert.equal(login.code, 0, login.stderr)
  const published = await cli(['--url', h.base, '--title', 'Stored token', '--zip', zip], { HOME: home })
  assert.equal(published.code, 0, published.stderr)
  assert.match(published.stdout, new RegExp(`^${h.base}/a/`))
  const nobody = await cli(['--url', h.base, '--title', 'x', '--zip', zip], { HOME: join(dir.path, 'nobody') })
  assert.equal(nobody.code, 1)
  assert.equal(nobody.stderr, `artsvc: not logged in to ${h.base}: run artsvc login or set ARTSVC_TOKEN\n`)
})

test('--help of the program and of each command exits 0 with examples and loads no server stack', async () => {
  for (const args of [['--help'], ['serve', '--help'], ['publish', '--help'], ['mcp-bridge', '--help']]) {
    const r = await loadedPackages([MAIN, ...args], { PATH: process.env.PATH ?? '' })
    assert.equal(r.code, 0, r.stderr)
    for (const heavy of ['fastify', 'undici', 'pg', 'kysely', 'pino']) {
      assert.ok(!r.packages.includes(heavy), `${args.join(' ')} loaded ${heavy}: ${r.packages.join(', ')}`)
    }
  }
  const help = await new Promise<string>((resolve) =>
    execFile(process.execPath, [MAIN, 'publish', '--help'], { encoding: 'utf8' }, (_e, out) => resolve(out)),
  )
  assert.match(help, /--zip <value>/)
  assert.match(help, /ARTSVC_TOKEN \(or ARTSVC_TOKEN_FILE/)
  assert.match(help, /Examples:\n {2}\$ artsvc publish/)
})
