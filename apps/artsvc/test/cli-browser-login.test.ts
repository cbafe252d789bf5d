/**
 * `artsvc login --browser` against a real OpenID provider (testkit's oidc-provider with a public
 * native client): the CLI prints the sign-in link, the "browser" (the provider's own redirects
 * followed in the test) comes back to the CLI's loopback listener, the token and the refresh
 * token are kept owner-only, and a login whose access token expired renews itself.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { type OidcProvider, startOidcProvider, tempDir } from '@gatehouse/testkit'
import { AUDIENCE, type Harness, SCOPE, startArtsvc } from './helpers/harness.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')
let op: OidcProvider
let h: Harness
const dir = tempDir('artsvc-browser-login-')

before(async () => {
  op = await startOidcProvider({
    redirectUris: ['http://127.0.0.1:9/cb'],
    audience: AUDIENCE,
    scopes: [SCOPE],
    nativeClientId: 'artsvc-cli',
  })
  h = await startArtsvc({ op })
})
after(async () => {
  await h?.close()
  await op?.stop()
  dir.remove()
})

const env = { PATH: process.env.PATH ?? '', HOME: dir.path, ARTSVC_URL: '' }

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...env, ARTSVC_URL: h.base } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
  })
}

/** Run `artsvc login --browser`, follow the link it prints as a browser would, return its outcome. */
function browserLogin(subject: string, args: string[] = []) {
  return new Promise<{ code: number; stdout: string; stderr: string; page: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'login', '--browser', '--audience', AUDIENCE, ...args], {
      env: { ...env, ARTSVC_URL: h.base },
    })
    let stdout = ''
    let stderr = ''
    let page = ''
    let followed = false
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => {
      stderr += c
      const link = /^ {2}(http\S+)$/m.exec(stderr)?.[1]
      if (!link || followed) return
      followed = true
      op.completeLogin(link, subject)
        .then((callback) => fetch(callback))
        .then(async (res) => {
          page = `${res.status} ${await res.text()}`
        })
        .catch((err: Error) => {
          child.kill()
          reject(err)
        })
    })
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr, page }))
  })
}

const stored = () =>
  JSON.parse(readFileSync(join(dir.path, '.config', 'gatehouse', 'artsvc.json'), 'utf8'))[new URL(h.base).origin] as {
    token: string
    refresh_token?: string
    expires_at?: string
    client_id?: string
  }

test('the browser sign-in keeps an access and a refresh token owner-only; commands then use them', async () => {
  const r = await browserLogin('alice')
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stderr, /^Open this link in a browser to sign in:\n {2}http:\/\/127\.0\.0\.1:\d+\/auth\?/)
  assert.match(r.stdout, /^logged in to http:\/\/127\.0\.0\.1:\d+ \(token kept in .*, refreshed when it expires\)\n$/)
  assert.equal(r.page, '200 Signed in to artsvc. You can close this tab.')
  const login = stored()
  assert.ok(login.refresh_token, 'a refresh token was kept')
  assert.equal(login.client_id, 'artsvc-cli')
  assert.ok(Date.parse(login.expires_at!) > Date.now())
  assert.equal(statSync(join(dir.path, '.config', 'gatehouse', 'artsvc.json')).mode & 0o777, 0o600)
  const listed = await cli(['list', '--json'])
  assert.equal(listed.code, 0, listed.stderr)
  assert.ok(Array.isArray(JSON.parse(listed.stdout)))
})

test('an expired access token is renewed with the refresh token; a refused refresh says to log in again', async () => {
  const file = join(dir.path, '.config', 'gatehouse', 'artsvc.json')
  const all = JSON.parse(readFileSync(file, 'utf8'))
  const origin = new URL(h.base).origin
  const before = all[origin]
  all[origin] = { ...before, expires_at: new Date(Date.now() - 1000).toISOString() }
  writeFileSync(file, JSON.stringify(all))
  const listed = await cli(['list', '--json'])
  assert.equal(listed.code, 0, listed.stderr)
  const renewed = stored()
  assert.notEqual(renewed.token, before.token, 'a new access token was saved')
  assert.ok(Date.parse(renewed.expires_at!) > Date.now())
  assert.equal(statSync(file).mode & 0o777, 0o600)

  const again = JSON.parse(readFileSync(file, 'utf8'))
  again[origin] = { ...renewed, expires_at: new Date(Date.now() - 1000).toISOString(), refresh_token: 'revoked' }
  writeFileSync(file, JSON.stringify(again))
  const refused = await cli(['list'])
  assert.equal(refused.code, 1)
  assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr)
  assert.match(
    refused.stderr,
    /^artsvc: the login for .* expired and could not be refreshed \(.*invalid_grant.*\): run artsvc login again\n$/,
  )
})

test('--browser with --token-file, and login with no way to get a token, are usage errors in one line', async () => {
  const both = await cli(['login', '--browser', '--token-file', 'x'])
  assert.equal(both.code, 2)
  assert.match(both.stderr, /give --browser or --token-file, not both/)
  const nothing = await cli(['login'])
  assert.equal(nothing.code, 2)
  assert.match(nothing.stderr, /give --browser \(sign in at the provider\), --token-file FILE or set ARTSVC_TOKEN/)
})
