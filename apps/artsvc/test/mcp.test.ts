/**
 * The MCP endpoint through the SDK's own client over real HTTP, on SQLite and PostgreSQL:
 * every tool for every audience (anonymous, owner, other user, viewer, administrator,
 * delegated user, and wrong-audience, wrong-scope and expired tokens), the OAuth
 * protected-resource metadata, inline publishing and its bound, and the audit records
 * the tools leave (the same as REST's).
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { startOidcProvider } from '@gatehouse/testkit'
import { JWKS_CACHE } from '../src/auth/bearer.ts'
import { AUDIENCE, type Backends, bearer, type Harness, SCOPE, startArtsvc, startBackends } from './helpers/harness.ts'
import { connectMcp, type McpSession } from './helpers/mcp-client.ts'
import { buildZip } from './helpers/zip-builder.ts'

const USER_TOOLS = [
  'artsvc_commit_upload',
  'artsvc_create_upload',
  'artsvc_get',
  'artsvc_get_branding',
  'artsvc_list',
  'artsvc_publish',
  'artsvc_revoke_share',
  'artsvc_set_visibility',
  'artsvc_share',
]
const ADMIN_TOOLS = [
  'artsvc_admin_activate_branding_theme',
  'artsvc_admin_delete_artifact',
  'artsvc_admin_delete_branding_theme',
  'artsvc_admin_get_branding',
  'artsvc_admin_list',
  'artsvc_admin_revoke_share',
  'artsvc_admin_update_branding',
]
const GATEWAY = 'gateway-service'

let backends: Backends
before(async () => {
  backends = await startBackends()
})
after(() => backends?.stop())

for (const dbName of ['sqlite', 'postgres'] as const) {
  describe(`MCP on ${dbName}`, () => {
    let h: Harness
    const sessions: McpSession[] = []
    const as = async (sub: string, claims?: Record<string, unknown>, extra: Record<string, string> = {}) => {
      const s = await connectMcp(h.base, { ...(await bearer(backends.op, sub, claims)), ...extra })
      sessions.push(s)
      return s
    }
    const post = async (headers: Record<string, string>, body: unknown = { jsonrpc: '2.0', id: 1, method: 'ping' }) =>
      fetch(`${h.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
      })

    before(async () => {
      const url = dbName === 'postgres' ? await backends.pg.createDatabase() : undefined
      h = await startArtsvc({
        op: backends.op,
        env: { ARTSVC_GATEWAY_OAUTH_SUBJECT: GATEWAY },
        ...(url ? { databaseUrl: url } : {}),
      })
    })
    after(async () => {
      await Promise.all(sessions.map((s) => s.close().catch(() => {})))
      await h?.close()
    })

    test('protected-resource metadata names the resource, issuer and scope; 401 challenges point at it', async () => {
      const meta = await fetch(`${h.base}/.well-known/oauth-protected-resource/mcp`)
      assert.equal(meta.status, 200)
      const doc = (await meta.json()) as Record<string, unknown>
      assert.equal(doc.resource, `${h.base}/mcp`)
      assert.deepEqual(doc.authorization_servers, [backends.op.issuer])
      assert.deepEqual(doc.scopes_supported, [SCOPE])
      assert.deepEqual(doc.bearer_methods_supported, ['header'])

      const anon = await post({})
      assert.equal(anon.status, 401)
      const challenge = anon.headers.get('www-authenticate') ?? ''
      assert.match(challenge, /^Bearer /)
      assert.ok(challenge.includes(`resource_metadata="${h.base}/.well-known/oauth-protected-resource/mcp"`), challenge)
      await anon.arrayBuffer()
      // The SDK client without a token cannot connect either.
      await assert.rejects(connectMcp(h.base, {}))
    })

    test('a token for the resource the metadata names (RFC 8707) works on /mcp, not on REST', async () => {
      const meta = (await (await fetch(`${h.base}/.well-known/oauth-protected-resource/mcp`)).json()) as {
        resource: string
      }
      assert.equal(meta.resource, `${h.base}/mcp`)
      const token = await backends.op.mintAccessToken({ sub: 'alice', scope: SCOPE, audience: meta.resource })
      const r = await post({ authorization: `Bearer ${token}` })
      assert.equal(r.status, 200)
      await r.arrayBuffer()
      const rest = await fetch(`${h.base}/api/v1/artifacts`, { headers: { authorization: `Bearer ${token}` } })
      assert.equal(rest.status, 401, 'REST keeps ARTSVC_OAUTH_AUDIENCE')
      await rest.arrayBuffer()
    })

    test('wrong audience, missing scope, expired and forged tokens are refused', async () => {
      const op = backends.op
      const wrongAud = await op.mintAccessToken({ sub: 'alice', scope: SCOPE, audience: 'https://other.test' })
      const r1 = await post({ authorization: `Bearer ${wrongAud}` })
      assert.equal(r1.status, 401)
      assert.match(r1.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
      await r1.arrayBuffer()
      const noScope = await op.mintAccessToken({ sub: 'alice', scope: 'openid profile' })
      const r2 = await post({ authorization: `Bearer ${noScope}` })
      assert.equal(r2.status, 403)
      const c2 = r2.headers.get('www-authenticate') ?? ''
      assert.match(c2, /error="insufficient_scope"/)
      assert.match(c2, new RegExp(`scope="${SCOPE}"`))
      await r2.arrayBuffer()
      const expired = await op.mintAccessToken({ sub: 'alice', scope: SCOPE, expiresIn: -120 })
      const r3 = await post({ authorization: `Bearer ${expired}` })
      assert.equal(r3.status, 401)
      await r3.arrayBuffer()
      const good = await op.mintAccessToken({ sub: 'alice', scope: SCOPE, audience: AUDIENCE })
      const forged = `${good.slice(0, -4)}AAAA`
      const r4 = await post({ authorization: `Bearer ${forged}` })
      assert.equal(r4.status, 401)
      await r4.arrayBuffer()
      for (const token of [wrongAud, noScope, expired]) {
        await assert.rejects(connectMcp(h.base, { authorization: `Bearer ${token}` }))
      }
    })

    test('every user tool, for the owner, a viewer and another user, with the audit records REST writes', async () => {
      const alice = await as('alice')
      const carol = await as('carol')
      const dave = await as('dave')
      assert.deepEqual(await alice.tools(), USER_TOOLS)
      assert.deepEqual(await dave.tools(), USER_TOOLS)

      const published = await alice.call('artsvc_publish', {
        title: 'Agent page',
        files: { 'index.html': '<h1>Hello</h1><script src="app.js"></script>', 'app.js': 'console.log(1)' },
      })
      assert.ok(published.ok, JSON.stringify(published.error))
      const id = published.out.artifact.id as string
      assert.equal(published.out.version.number, 1)
      assert.equal(published.out.version.file_count, 2)
      assert.equal(published.out.artifact.url, `${h.base}/a/${id}`)

      // The content is really served: REST sees the same artifact and manifest.
      const aliceRest = await bearer(backends.op, 'alice')
      const rest = (await (
        await fetch(`${h.base}/api/v1/artifacts/${id}/versions/1`, { headers: aliceRest })
      ).json()) as {
        files: { path: string }[]
      }
      assert.deepEqual(
        rest.files.map((f) => f.path),
        ['app.js', 'index.html'],
      )

      const listed = await alice.call('artsvc_list')
      assert.ok(listed.out.artifacts.some((a: { id: string; role: string }) => a.id === id && a.role === 'owner'))
      const got = await alice.call('artsvc_get', { artifact: id })
      assert.equal(got.out.artifact.versions.length, 1)
      const manifest = await alice.call('artsvc_get', { artifact: id, version: 1 })
      assert.equal(manifest.out.version.files.length, 2)
      assert.equal((await alice.call('artsvc_get', { artifact: id, version: 9 })).error?.code, 'version_not_found')

      // Another user sees nothing of a private artifact; strict inputs refuse unknown arguments.
      assert.equal((await dave.call('artsvc_get', { artifact: id })).error?.code, 'artifact_not_found')
      assert.ok(!(await dave.call('artsvc_list')).out.artifacts.some((a: { id: string }) => a.id === id))
      const unknownArg = await dave.client.callTool({ name: 'artsvc_list', arguments: { everything: true } })
      assert.equal(unknownArg.isError, true)

      // A new version by the owner; an editor's rights are REST's (grants) and the same rules apply.
      const v2 = await alice.call('artsvc_publish', {
        title: 'Agent page v2',
        artifact: id,
        bundle_base64: buildZip([{ name: 'index.html', data: '<h1>v2</h1>' }]).toString('base64'),
      })
      assert.equal(v2.out.version.number, 2)
      assert.equal(
        (await dave.call('artsvc_publish', { title: 'x', artifact: id, files: { 'index.html': 'x' } })).error?.code,
        'artifact_not_found',
      )
      const put = await fetch(`${h.base}/api/v1/artifacts/${id}/grants`, {
        method: 'PUT',
        headers: { ...aliceRest, 'content-type': 'application/json' },
        body: JSON.stringify({ subject: 'carol', role: 'viewer' }),
      })
      assert.equal(put.status, 200)
      assert.equal((await carol.call('artsvc_get', { artifact: id })).out.artifact.role, 'viewer')
      const denied = await carol.call('artsvc_set_visibility', { artifact: id, visibility: 'authenticated' })
      assert.equal(denied.error?.code, 'access_denied')
      assert.equal((await carol.call('artsvc_share', { artifact: id })).error?.code, 'access_denied')

      const vis = await alice.call('artsvc_set_visibility', { artifact: id, visibility: 'authenticated' })
      assert.equal(vis.out.visibility, 'authenticated')
      assert.ok(
        (await dave.call('artsvc_list')).out.artifacts.some(
          (a: { id: string; role: string }) => a.id === id && a.role === 'reader',
        ),
      )

      const share = await alice.call('artsvc_share', { artifact: id, version: 1, max_views: 3, label: 'review' })
      assert.equal(share.out.version, 1)
      assert.match(share.out.url, /\/s\/[A-Za-z0-9_-]{43}$/)
      const opened = await fetch(share.out.url, { redirect: 'manual' })
      assert.equal(opened.status, 303)
      assert.equal(
        (await dave.call('artsvc_revoke_share', { artifact: id, share: share.out.id })).error?.code,
        'access_denied',
      )
      const revoked = await alice.call('artsvc_revoke_share', { artifact: id, share: share.out.id })
      assert.deepEqual(revoked.out, { share: share.out.id, artifact: id, revoked: true })
      assert.equal((await fetch(share.out.url, { redirect: 'manual' })).status, 410)

      // Non-administrators cannot call what they cannot list.
      const hidden = await dave.client.callTool({ name: 'artsvc_admin_list', arguments: {} }).catch((err: Error) => err)
      assert.ok(hidden instanceof Error || hidden.isError === true)

      const audit = (await (
        await fetch(`${h.base}/api/v1/admin/audit?limit=50`, { headers: await bearer(backends.op, 'root-admin') })
      ).json()) as { events: { action: string; target_id: string; actor: string }[] }
      const mine = audit.events.filter((e) => e.actor === 'alice').map((e) => e.action)
      for (const action of ['version.publish', 'artifact.visibility', 'share.create', 'share.revoke'])
        assert.ok(mine.includes(action), `${action} in ${mine.join()}`)
    })

    test('arguments the schema refuses answer the coded error body naming the field; expiries take any offset', async () => {
      const erin = await as('erin')
      const refusals: [string, Record<string, unknown>, string][] = [
        ['artsvc_list', { everything: true }, 'arguments of artsvc_list: Unrecognized key: "everything"'],
        [
          'artsvc_publish',
          { title: '', files: { 'index.html': 'x' } },
          'arguments of artsvc_publish: title: Too small: expected string to have >=1 characters',
        ],
        [
          'artsvc_get',
          { artifact: 'abc', version: 0 },
          'arguments of artsvc_get: artifact: Invalid string: must match pattern /^[A-Za-z0-9_-]{16}$/; version: Too small: expected number to be >=1',
        ],
        [
          'artsvc_set_visibility',
          { artifact: 'AAAAAAAAAAAAAAAA', visibility: 'public' },
          'arguments of artsvc_set_visibility: visibility: Invalid option: expected one of "private"|"authenticated"',
        ],
        [
          'artsvc_share',
          { artifact: 'AAAAAAAAAAAAAAAA', expires_at: 'tomorrow' },
          'arguments of artsvc_share: expires_at: Invalid ISO datetime',
        ],
      ]
      for (const [tool, args, message] of refusals) {
        const raw = await erin.client.callTool({ name: tool, arguments: args })
        assert.equal(raw.isError, true, tool)
        const text = (raw.content as { type: string; text: string }[])[0]!.text
        assert.deepEqual(JSON.parse(text), { error: { code: 'invalid_request', message } }, tool)
      }
      // Nothing was published by the refused call.
      assert.deepEqual(
        (await erin.call('artsvc_list')).out.artifacts.filter((a: { role: string }) => a.role === 'owner'),
        [],
      )

      // An expiry with an offset, as REST takes it, is stored and answered in UTC.
      const published = await erin.call('artsvc_publish', { title: 'Offsets', files: { 'index.html': 'x' } })
      const id = published.out.artifact.id as string
      const year = new Date().getUTCFullYear() + 1
      const share = await erin.call('artsvc_share', { artifact: id, expires_at: `${year}-06-30T20:00:00+02:00` })
      assert.ok(share.ok, JSON.stringify(share.error))
      assert.equal(share.out.expires_at, `${year}-06-30T18:00:00.000Z`)
      const zulu = await erin.call('artsvc_share', { artifact: id, expires_at: `${year}-06-30T18:00:00Z` })
      assert.equal(zulu.out.expires_at, `${year}-06-30T18:00:00.000Z`)
    })

    test('the upload pair serves bundles above the inline bound; the refusal names it', async () => {
      const alice = await as('alice')
      // 4.5 MiB of incompressible data: over the 4 MiB request bound, under ARTSVC_MAX_BUNDLE_BYTES.
      const zip = buildZip([
        { name: 'index.html', data: '<p>big</p>' },
        { name: 'blob.bin', data: randomBytes(4.5 * 1024 * 1024), method: 0 },
      ])
      const inline = await post(
        { ...(await bearer(backends.op, 'alice')) },
        {
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'artsvc_publish', arguments: { title: 'Big', bundle_base64: zip.toString('base64') } },
        },
      )
      assert.equal(inline.status, 413)
      const body = (await inline.json()) as { error: { code: string; message: string } }
      assert.equal(body.error.code, 'inline_bundle_too_large')
      assert.match(body.error.message, /artsvc_create_upload/)
      assert.match(body.error.message, /artsvc_commit_upload/)
      // The same without a declared length (chunked): refused once the bound is passed.
      const payload = Buffer.from(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 8,
          method: 'tools/call',
          params: { name: 'artsvc_publish', arguments: { title: 'Big', bundle_base64: zip.toString('base64') } },
        }),
      )
      const chunked = await fetch(`${h.base}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(await bearer(backends.op, 'alice')),
        },
        body: new ReadableStream({
          start(c) {
            for (let at = 0; at < payload.length; at += 256 * 1024) c.enqueue(payload.subarray(at, at + 256 * 1024))
            c.close()
          },
        }),
        duplex: 'half',
      } as RequestInit)
      assert.equal(chunked.status, 413)
      assert.equal(((await chunked.json()) as { error: { code: string } }).error.code, 'inline_bundle_too_large')

      const upload = await alice.call('artsvc_create_upload', { title: 'Big' })
      assert.ok(upload.ok)
      assert.equal(
        (await alice.call('artsvc_commit_upload', { upload: upload.out.id, upload_token: upload.out.upload_token }))
          .error?.code,
        'upload_not_received',
      )
      const putRes = await fetch(upload.out.upload_url, {
        method: 'PUT',
        headers: { 'x-artsvc-upload-token': upload.out.upload_token },
        body: new Uint8Array(zip),
      })
      assert.equal(putRes.status, 200)
      await putRes.arrayBuffer()
      assert.equal(
        (await alice.call('artsvc_commit_upload', { upload: upload.out.id, upload_token: 'wrong-token-value' })).error
          ?.code,
        'upload_token_invalid',
      )
      const dave = await as('dave')
      assert.equal(
        (await dave.call('artsvc_commit_upload', { upload: upload.out.id, upload_token: upload.out.upload_token }))
          .error?.code,
        'access_denied',
      )
      const committed = await alice.call('artsvc_commit_upload', {
        upload: upload.out.id,
        upload_token: upload.out.upload_token,
      })
      assert.ok(committed.ok, JSON.stringify(committed.error))
      assert.equal(committed.out.version.file_count, 2)

      // Invalid inline bundles get the bundle rules' reasons.
      const noEntry = await alice.call('artsvc_publish', { title: 'x', files: { 'other.html': 'x' } })
      assert.equal(noEntry.error?.code, 'bundle_invalid')
      const traversal = await alice.call('artsvc_publish', { title: 'x', files: { 'index.html': 'x', '../evil': 'x' } })
      assert.equal(traversal.error?.code, 'bundle_invalid')
      const both = await alice.call('artsvc_publish', {
        title: 'x',
        files: { 'index.html': 'x' },
        bundle_base64: 'AAAA',
      })
      assert.equal(both.error?.code, 'bundle_invalid')
      const badB64 = await alice.call('artsvc_publish', { title: 'x', bundle_base64: 'not base64!' })
      assert.equal(badB64.error?.code, 'bundle_invalid')
    })

    test('administrators see and use the admin tools; they get no owner rights', async () => {
      const alice = await as('alice')
      const admin = await as('root-admin')
      const groupAdmin = await as('erin', { groups: ['artsvc-admins'] })
      assert.deepEqual(await admin.tools(), [...USER_TOOLS, ...ADMIN_TOOLS].sort())
      assert.deepEqual(await groupAdmin.tools(), [...USER_TOOLS, ...ADMIN_TOOLS].sort())
      const p = await alice.call('artsvc_publish', { title: 'Doomed', files: { 'index.html': 'bye' } })
      const id = p.out.artifact.id as string
      assert.equal((await admin.call('artsvc_get', { artifact: id })).error?.code, 'artifact_not_found')
      const share = await alice.call('artsvc_share', { artifact: id })
      const all = await admin.call('artsvc_admin_list')
      const row = all.out.artifacts.find((a: { id: string }) => a.id === id)
      assert.equal(row.owner, 'alice')
      assert.equal(row.shares[0].id, share.out.id)
      const revoked = await admin.call('artsvc_admin_revoke_share', { share: share.out.id })
      assert.equal(revoked.out.artifact, id)
      assert.equal(
        (await admin.call('artsvc_admin_revoke_share', { share: 'AAAAAAAAAAAAAAAA' })).error?.code,
        'share_not_found',
      )
      const second = await alice.call('artsvc_share', { artifact: id })
      const deleted = await groupAdmin.call('artsvc_admin_delete_artifact', { artifact: id })
      assert.deepEqual(deleted.out, { artifact: id, deleted: true, shares_revoked: 1 })
      assert.equal((await fetch(second.out.url, { redirect: 'manual' })).status, 410)
      assert.equal((await alice.call('artsvc_get', { artifact: id })).error?.code, 'artifact_not_found')
      assert.equal(
        (await admin.call('artsvc_admin_delete_artifact', { artifact: id })).error?.code,
        'artifact_not_found',
      )
    })

    test('gateway delegation: only the gateway token, only existing users, fail closed', async () => {
      const alice = await as('alice')
      const p = await alice.call('artsvc_publish', { title: 'Via gateway', files: { 'index.html': 'gw' } })
      const id = p.out.artifact.id as string
      const gwToken = await backends.op.clientCredentialsToken(SCOPE)
      const payload = JSON.parse(Buffer.from(gwToken.split('.')[1]!, 'base64url').toString()) as { sub: string }
      // The provider's client-credentials token names the client as its subject.
      assert.equal(payload.sub, backends.op.clientId)
      const delegate = (sub: string, token: string) =>
        connectMcp(h.base, { authorization: `Bearer ${token}`, 'x-gateway-oauth-subject': sub })
      const gateway = await backends.op.mintAccessToken({ sub: GATEWAY, scope: SCOPE })
      const asAlice = await delegate('alice', gateway)
      sessions.push(asAlice)
      assert.equal((await asAlice.call('artsvc_get', { artifact: id })).out.artifact.role, 'owner')
      const v = await asAlice.call('artsvc_set_visibility', { artifact: id, visibility: 'private' })
      assert.ok(v.ok)
      // Unknown users and other bearers fail closed, over MCP and REST alike.
      const unknown = await post({ authorization: `Bearer ${gateway}`, 'x-gateway-oauth-subject': 'nobody-here' })
      assert.equal(unknown.status, 403)
      assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'delegated_user_unknown')
      const other = await post({ ...(await bearer(backends.op, 'dave')), 'x-gateway-oauth-subject': 'alice' })
      assert.equal(other.status, 403)
      assert.equal(((await other.json()) as { error: { code: string } }).error.code, 'delegation_refused')
      const restOther = await fetch(`${h.base}/api/v1/artifacts`, {
        headers: { ...(await bearer(backends.op, 'dave')), 'x-gateway-oauth-subject': 'alice' },
      })
      assert.equal(restOther.status, 403)
      await restOther.arrayBuffer()
      const ccOther = await fetch(`${h.base}/api/v1/artifacts`, {
        headers: { authorization: `Bearer ${gwToken}`, 'x-gateway-oauth-subject': 'alice' },
      })
      assert.equal(ccOther.status, 403, 'a client whose subject is not the configured gateway cannot delegate')
      await ccOther.arrayBuffer()
      const restGw = await fetch(`${h.base}/api/v1/me`, {
        headers: { authorization: `Bearer ${gateway}`, 'x-gateway-oauth-subject': 'alice' },
      })
      assert.equal(((await restGw.json()) as { subject: string }).subject, 'alice')
      // The gateway cannot make itself an administrator through a user, nor act as nobody.
      const asAdmin = await delegate('root-admin', gateway).catch((err: Error) => err)
      assert.ok(!(asAdmin instanceof Error), 'root-admin exists: it signed in in an earlier test')
      sessions.push(asAdmin as McpSession)
      assert.ok((await (asAdmin as McpSession).tools()).includes('artsvc_admin_list'))
      // Audit names both.
      const audit = (await (
        await fetch(`${h.base}/api/v1/admin/audit?limit=20`, { headers: await bearer(backends.op, 'root-admin') })
      ).json()) as { events: { action: string; actor: string; target_id: string; details: Record<string, unknown> }[] }
      const rec = audit.events.find((e) => e.action === 'artifact.visibility' && e.target_id === id)
      assert.equal(rec?.actor, 'alice')
      assert.equal(rec?.details.gateway, GATEWAY)
    })
  })
}

test('MCP works in edge_access mode too: bearer tokens from the OIDC issuer', async () => {
  const h = await startArtsvc({
    op: backends.op,
    env: {
      ARTSVC_AUTH_MODE: 'edge_access',
      ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: 'http://127.0.0.1:9',
      ARTSVC_EDGE_ACCESS_AUD: 'edge-aud',
    },
  })
  try {
    const meta = (await (await fetch(`${h.base}/.well-known/oauth-protected-resource/mcp`)).json()) as {
      authorization_servers: string[]
    }
    assert.deepEqual(meta.authorization_servers, [backends.op.issuer])
    const mcp = await connectMcp(h.base, await bearer(backends.op, 'alice'))
    try {
      const p = await mcp.call('artsvc_publish', { title: 'edge', files: { 'index.html': 'edge mode' } })
      assert.ok(p.ok, JSON.stringify(p.error))
      assert.equal((await mcp.call('artsvc_list')).out.artifacts.length, 1)
    } finally {
      await mcp.close()
    }
    assert.equal((await post(h.base, {})).status, 401)
  } finally {
    await h.close()
  }
})

test('the issuer rotates its signing key: new-key tokens verify without a restart, old-key tokens while still published', async () => {
  const op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
  const h = await startArtsvc({ op })
  try {
    const before = await bearer(op, 'alice')
    assert.equal((await post(h.base, before)).status, 200, 'the first key verifies (JWKS fetched)')
    await op.rotateKeys()
    const after = await bearer(op, 'alice')
    // The key set was fetched moments ago: the refetch for the new key id waits out the cooldown.
    const deadline = Date.now() + JWKS_CACHE.cooldownDuration + 5000
    let status = (await post(h.base, after)).status
    while (status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250))
      status = (await post(h.base, after)).status
    }
    assert.equal(status, 200, 'a token signed with the rotated-in key verifies')
    assert.equal((await post(h.base, before)).status, 200, 'the old key is still published, so its tokens verify')
    const mcp = await connectMcp(h.base, after)
    try {
      assert.ok((await mcp.call('artsvc_list')).ok)
    } finally {
      await mcp.close()
    }
  } finally {
    await h.close()
    await op.stop()
  }
})

async function post(base: string, headers: Record<string, string>) {
  const r = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  })
  await r.arrayBuffer()
  return r
}
