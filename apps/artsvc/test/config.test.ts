/** Configuration: defaults, strict checks listed at once, and startup failures as one clear line (child process). */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { ConfigError } from '@gatehouse/kit'
import { freePort } from '@gatehouse/testkit'
import { loadArtsvcConfig, loadPublishConfig } from '../src/config.ts'

const base = {
  ARTSVC_PUBLIC_URL: 'https://artifacts.example.com',
  ARTSVC_CONTENT_URL: 'https://content.example-usercontent.com',
  ARTSVC_COOKIE_SECRET: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==',
  ARTSVC_OIDC_ISSUER: 'https://id.example.com',
  ARTSVC_OIDC_CLIENT_ID: 'artsvc',
  ARTSVC_OIDC_CLIENT_SECRET: 'x',
}

function problems(env: Record<string, string>): string[] {
  try {
    loadArtsvcConfig({ env })
  } catch (err) {
    assert.ok(err instanceof ConfigError)
    return err.lines
  }
  return []
}

test('defaults follow the spec', () => {
  const c = loadArtsvcConfig({ env: base })
  assert.equal(c.authMode, 'oidc')
  assert.equal(c.listen, '127.0.0.1:18100')
  assert.equal(c.storageBackend, 'filesystem')
  assert.equal(c.storageRoot, '/var/lib/artsvc/artifacts')
  assert.equal(c.database, 'sqlite:/var/lib/artsvc/artifacts/artsvc.db')
  assert.equal(c.maxBundleBytes, 26_214_400)
  assert.equal(c.maxFiles, 500)
  assert.equal(c.uploadTtl, 15 * 60_000)
  assert.equal(c.viewerTicketTtl, 5 * 60_000)
  assert.equal(c.sessionTtl, 12 * 3_600_000)
  assert.equal(c.maintenanceInterval, 3_600_000)
  assert.equal(c.auditRetention, 8760 * 3_600_000)
  assert.equal(c.oauthScope, 'artsvc:mcp')
  assert.equal(c.s3Region, 'us-east-1')
  assert.equal(c.s3UsePathStyle, false)
  assert.deepEqual([c.publicHost, c.contentHost], ['artifacts.example.com', 'content.example-usercontent.com'])
})

test('the two origins must differ, use https off loopback, and be bare origins', () => {
  assert.deepEqual(problems({ ...base, ARTSVC_CONTENT_URL: 'https://artifacts.example.com:8443' }), [
    'ARTSVC_CONTENT_URL: must use a different hostname from ARTSVC_PUBLIC_URL',
  ])
  assert.deepEqual(problems({ ...base, ARTSVC_PUBLIC_URL: 'http://artifacts.example.com' }), [
    'ARTSVC_PUBLIC_URL: must use https (plain http only on loopback)',
  ])
  assert.deepEqual(
    problems({ ...base, ARTSVC_PUBLIC_URL: 'http://127.0.0.1:8080', ARTSVC_CONTENT_URL: 'http://localhost:8080' }),
    [],
  )
  assert.deepEqual(problems({ ...base, ARTSVC_PUBLIC_URL: 'https://a.example/app' }), [
    'ARTSVC_PUBLIC_URL: must be an origin without a path',
  ])
})

test('every violation is listed at once, naming the variable', () => {
  const lines = problems({
    ARTSVC_PUBLIC_URL: 'https://a.example',
    ARTSVC_CONTENT_URL: 'https://b.example',
    ARTSVC_COOKIE_SECRET: 'short',
    ARTSVC_AUTH_MODE: 'magic',
    ARTSVC_MAX_FILES: 'many',
    ARTSVC_UPLOAD_TTL: '15 minutes',
    ARTSVC_S3_USE_PATH_STYLE: 'maybe',
  })
  for (const v of ['ARTSVC_AUTH_MODE', 'ARTSVC_MAX_FILES', 'ARTSVC_UPLOAD_TTL', 'ARTSVC_S3_USE_PATH_STYLE']) {
    assert.ok(
      lines.some((l) => l.startsWith(`${v}:`)),
      `${v} in ${lines.join(' | ')}`,
    )
  }
  assert.deepEqual(problems({ ...base, ARTSVC_COOKIE_SECRET: 'x'.repeat(31) }), [
    'ARTSVC_COOKIE_SECRET: must be at least 32 bytes',
  ])
})

test('a bad value and a broken cross-field rule are reported together, in one run', () => {
  // Before: the bad ARTSVC_MAX_FILES alone, and the two origins' clash only once it was fixed.
  assert.deepEqual(
    problems({ ...base, ARTSVC_MAX_FILES: 'many', ARTSVC_CONTENT_URL: 'https://artifacts.example.com' }),
    [
      'ARTSVC_MAX_FILES: must be an integer, got string "many"',
      'ARTSVC_CONTENT_URL: must use a different hostname from ARTSVC_PUBLIC_URL',
    ],
  )
  // A rule that depends on a refused setting skips itself; one that asks whether it was given counts it.
  const lines = problems({
    ...base,
    ARTSVC_AUTH_MODE: 'magic',
    ARTSVC_OIDC_ISSUER: 'not a url',
    ARTSVC_OAUTH_AUDIENCE: 'https://artifacts.example.com',
    ARTSVC_COOKIE_SECRET: 'short',
  })
  assert.equal(lines.length, 3, lines.join(' | '))
  assert.match(lines[0]!, /^ARTSVC_AUTH_MODE: /)
  assert.match(lines[1]!, /^ARTSVC_OIDC_ISSUER: /)
  assert.equal(lines[2], 'ARTSVC_COOKIE_SECRET: must be at least 32 bytes')
  // A missing required setting beside a cross-field problem: both lines, no crash on the gap.
  const { ARTSVC_PUBLIC_URL: _p, ...noPublic } = base
  assert.deepEqual(problems({ ...noPublic, ARTSVC_STORAGE_BACKEND: 's3' }), [
    'publicUrl: required (set ARTSVC_PUBLIC_URL or "publicUrl" in the config file)',
    'ARTSVC_S3_BUCKET: required when ARTSVC_STORAGE_BACKEND is s3',
  ])
})

test('startup: a bad value and a cross-field conflict are both on stderr, one line each', () => {
  const r = runServer({ ...base, ARTSVC_SESSION_TTL: 'forever', ARTSVC_CONTENT_URL: base.ARTSVC_PUBLIC_URL })
  assert.equal(r.status, 1)
  const lines = r.stderr.trim().split('\n')
  assert.equal(lines.length, 2, r.stderr)
  assert.match(lines[0]!, /^artsvc: ARTSVC_SESSION_TTL: /)
  assert.equal(lines[1], 'artsvc: ARTSVC_CONTENT_URL: must use a different hostname from ARTSVC_PUBLIC_URL')
})

test('a cross-field problem names each setting the way it was given (file key, flag or variable)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'artsvc-config-'))
  try {
    const file = join(dir, 'artsvc.json')
    writeFileSync(
      file,
      JSON.stringify({ publicUrl: 'https://a.example', contentUrl: 'https://a.example:8443', maxFiles: 'x' }),
    )
    const { ARTSVC_PUBLIC_URL: _p, ARTSVC_CONTENT_URL: _c, ...rest } = base
    let lines: string[] = []
    try {
      loadArtsvcConfig({ env: { ...rest, ARTSVC_AUTH_MODE: 'edge_access' }, file })
    } catch (err) {
      assert.ok(err instanceof ConfigError)
      lines = err.lines
    }
    assert.deepEqual(lines, [
      'maxFiles: must be an integer, got string "x"',
      `contentUrl (in ${file}): must use a different hostname from publicUrl (in ${file})`,
      'ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: required when ARTSVC_AUTH_MODE is edge_access',
      'ARTSVC_EDGE_ACCESS_AUD: required when ARTSVC_AUTH_MODE is edge_access',
    ])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('mode-specific requirements', () => {
  assert.deepEqual(problems({ ...base, ARTSVC_STORAGE_BACKEND: 's3' }), [
    'ARTSVC_S3_BUCKET: required when ARTSVC_STORAGE_BACKEND is s3',
  ])
  assert.deepEqual(
    problems({
      ...base,
      ARTSVC_STORAGE_BACKEND: 's3',
      ARTSVC_S3_BUCKET: 'b',
      ARTSVC_S3_ENDPOINT: 'http://s3.example.com',
    }),
    ['ARTSVC_S3_ENDPOINT: must use https (plain http only on loopback)'],
  )
  assert.deepEqual(problems({ ...base, ARTSVC_AUTH_MODE: 'edge_access' }), [
    'ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: required when ARTSVC_AUTH_MODE is edge_access',
    'ARTSVC_EDGE_ACCESS_AUD: required when ARTSVC_AUTH_MODE is edge_access',
  ])
  const { ARTSVC_OIDC_CLIENT_SECRET: _s, ...noSecret } = base
  assert.deepEqual(problems(noSecret), ['ARTSVC_OIDC_CLIENT_SECRET: required when ARTSVC_AUTH_MODE is oidc'])
})

const MAIN = new URL('../src/main.ts', import.meta.url).pathname
function runServer(env: Record<string, string>) {
  return spawnSync(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  })
}

test('startup: a config error is one clear line per problem on stderr and exit 1', () => {
  const r = runServer({ ...base, ARTSVC_CONTENT_URL: base.ARTSVC_PUBLIC_URL })
  assert.equal(r.status, 1)
  assert.equal(r.stderr, 'artsvc: ARTSVC_CONTENT_URL: must use a different hostname from ARTSVC_PUBLIC_URL\n')
})

test('startup: an unreachable database is one clear line and exit 1', async () => {
  const port = await freePort()
  const r = runServer({
    ...base,
    ARTSVC_STORAGE_ROOT: '/tmp/artsvc-unused',
    ARTSVC_DATABASE_URL: `postgres://u@127.0.0.1:${port}/db`,
  })
  assert.equal(r.status, 1)
  const lines = r.stderr.trim().split('\n')
  assert.equal(lines.length, 1)
  assert.match(lines[0]!, /^artsvc: database postgres:\/\/u@127\.0\.0\.1:\d+\/db is unreachable/)
})

test('serve --help lists every setting', () => {
  const r = spawnSync(process.execPath, [MAIN, 'serve', '--help'], { encoding: 'utf8' })
  assert.equal(r.status, 0)
  for (const v of ['ARTSVC_PUBLIC_URL', 'ARTSVC_CONTENT_URL', 'ARTSVC_S3_BUCKET', 'ARTSVC_AUDIT_RETENTION'])
    assert.match(r.stdout, new RegExp(v))
})

test('artsvc publish: missing flags and a half mTLS pair are reported together', () => {
  let lines: string[] = []
  try {
    loadPublishConfig({ title: 'Build 42' }, { ARTSVC_TOKEN: 't', ARTSVC_CLIENT_CERT: '/etc/artsvc/client.crt' })
  } catch (err) {
    assert.ok(err instanceof ConfigError)
    lines = err.lines
  }
  assert.equal(lines.length, 3, lines.join(' | '))
  // publish reads no config file, so none is offered.
  assert.equal(lines[0], 'url: required (set --url or ARTSVC_URL)')
  assert.equal(lines[1], 'zip: required (set --zip)')
  assert.equal(lines[2], 'ARTSVC_CLIENT_CERT and ARTSVC_CLIENT_KEY: set both or neither')
})
