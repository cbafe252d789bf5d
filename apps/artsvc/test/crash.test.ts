/**
 * Crash safety of commit: the server runs as a child process and is killed (SIGKILL) in
 * the middle of committing a 400-file bundle, at different points. After a restart the
 * state is either the old one (no version; the upload can be committed again) or the new
 * one (a complete version whose every file is readable) — never half a version.
 * Killed in the middle of receiving a PUT, the upload session takes a retried PUT after the
 * restart (nothing is left marked as receiving for good).
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { type Child, freePort, type OidcProvider, startChild, startOidcProvider, tempDir } from '@gatehouse/testkit'
import { AUDIENCE, baseEnv, bearer, SCOPE } from './helpers/harness.ts'
import { buildZip } from './helpers/zip-builder.ts'

const NODE = process.execPath
const MAIN = new URL('../src/main.ts', import.meta.url).pathname
let op: OidcProvider
const dir = tempDir('artsvc-crash-')
let port: number
let env: Record<string, string>

before(async () => {
  op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
  port = await freePort()
  env = { ...baseEnv(dir.path, port, op), PATH: process.env.PATH ?? '' }
})
after(async () => {
  await op?.stop()
  dir.remove()
})

function start(): Promise<Child> {
  return startChild({
    name: 'artsvc',
    command: NODE,
    args: [MAIN],
    env,
    logFile: join(dir.path, 'artsvc.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 204,
  })
}

function countBlobs(): number {
  const objects = join(dir.path, 'objects')
  if (!existsSync(objects)) return 0
  return readdirSync(objects).reduce((n, d) => n + (d.startsWith('.') ? 0 : readdirSync(join(objects, d)).length), 0)
}

// Fresh random content each time: blobs are content-addressed, so a repeated bundle would write nothing new.
const freshBundle = () =>
  buildZip([
    { name: 'index.html', data: `<!doctype html><p>${randomBytes(8).toString('hex')}</p>` },
    ...Array.from({ length: 400 }, (_, i) => ({ name: `data/${i}.bin`, data: randomBytes(8 * 1024), method: 0 })),
  ])

async function checkConsistent(auth: Record<string, string>, uploadId: string, token: string) {
  const base = `http://127.0.0.1:${port}`
  const list = (await (await fetch(`${base}/api/v1/artifacts`, { headers: auth })).json()) as {
    artifacts: { id: string }[]
  }
  for (const a of list.artifacts) {
    const detail = (await (await fetch(`${base}/api/v1/artifacts/${a.id}`, { headers: auth })).json()) as {
      versions: { number: number; file_count: number }[]
    }
    assert.ok(detail.versions.length > 0, 'no artifact without a version')
    for (const v of detail.versions) {
      const version = (await (
        await fetch(`${base}/api/v1/artifacts/${a.id}/versions/${v.number}`, { headers: auth })
      ).json()) as { files: unknown[] }
      assert.equal(version.files.length, v.file_count, 'every file of a version is in its manifest')
      assert.equal(v.file_count, 401)
    }
    const page = await (await fetch(`${base}/a/${a.id}`, { headers: auth })).text()
    const frame = /<iframe[^>]*src="([^"]+)"/.exec(page)![1]!.replaceAll('&amp;', '&')
    for (const f of ['index.html', 'data/0.bin', 'data/399.bin']) {
      assert.equal((await fetch(frame.replace('index.html', f))).status, 200, `${f} readable`)
    }
  }
  // The interrupted upload either committed or can be committed now.
  const retry = await fetch(`${base}/api/v1/uploads/${uploadId}/commit`, {
    method: 'POST',
    headers: { ...auth, 'x-artsvc-upload-token': token },
  })
  assert.ok([201, 409].includes(retry.status), `retry answered ${retry.status}`)
  return list.artifacts.length + (retry.status === 201 ? 1 : 0)
}

test('killing the server mid-commit leaves the old state or the new one, never half', async () => {
  const auth = await bearer(op, 'alice')
  const base = `http://127.0.0.1:${port}`
  let expected = 0
  for (const killAfterBlobs of [5, 300]) {
    const child = await start()
    const created = (await (
      await fetch(`${base}/api/v1/artifacts/uploads`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ title: `crash ${killAfterBlobs}`, entrypoint: 'index.html' }),
      })
    ).json()) as { id: string; upload_url: string; upload_token: string }
    const put = await fetch(created.upload_url, {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': created.upload_token },
      body: new Uint8Array(freshBundle()),
    })
    assert.equal(put.status, 200)
    const startBlobs = countBlobs()
    const commit = fetch(`${base}/api/v1/uploads/${created.id}/commit`, {
      method: 'POST',
      headers: { ...auth, 'x-artsvc-upload-token': created.upload_token },
    }).catch(() => undefined)
    const deadline = Date.now() + 60_000
    while (countBlobs() - startBlobs < killAfterBlobs && Date.now() < deadline) await delay(1)
    child.process.kill('SIGKILL')
    await child.stop()
    await commit
    const restarted = await start()
    try {
      expected += 1
      const artifacts = await checkConsistent(auth, created.id, created.upload_token)
      assert.equal(artifacts, expected)
    } finally {
      await restarted.stop()
    }
  }
})

test('killing the server mid-PUT: after a restart the same session takes a retried PUT', async () => {
  const auth = await bearer(op, 'alice')
  const base = `http://127.0.0.1:${port}`
  const child = await start()
  const created = (await (
    await fetch(`${base}/api/v1/artifacts/uploads`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'crash mid-PUT', entrypoint: 'index.html' }),
    })
  ).json()) as { id: string; upload_url: string; upload_token: string }
  const zip = freshBundle()
  const req = request(created.upload_url, { method: 'PUT', headers: { 'x-artsvc-upload-token': created.upload_token } })
  const failed = new Promise<void>((resolve) => {
    req.on('error', () => resolve())
    req.on('response', (res) => {
      res.resume()
      resolve()
    })
  })
  req.write(zip.subarray(0, zip.length >> 1))
  const staging = join(dir.path, 'staging')
  const receiving = () => existsSync(staging) && readdirSync(staging).some((f) => f.startsWith(`${created.id}.part-`))
  const deadline = Date.now() + 60_000
  while (!receiving() && Date.now() < deadline) await delay(5)
  assert.ok(receiving(), 'the server was receiving the PUT')
  child.process.kill('SIGKILL')
  await child.stop()
  await failed
  const restarted = await start()
  try {
    const retry = await fetch(created.upload_url, {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': created.upload_token },
      body: new Uint8Array(zip),
    })
    assert.equal(retry.status, 200)
    const commit = await fetch(`${base}/api/v1/uploads/${created.id}/commit`, {
      method: 'POST',
      headers: { ...auth, 'x-artsvc-upload-token': created.upload_token },
    })
    assert.equal(commit.status, 201)
  } finally {
    await restarted.stop()
  }
})
