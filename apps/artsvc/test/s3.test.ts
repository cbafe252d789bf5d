/**
 * The S3 backend against a real S3-compatible server (s3rver): published files land in
 * the bucket under the prefix byte for byte (no aws-chunked framing), the content origin
 * reads them back, readiness follows the bucket, and startup refuses a missing bucket. While
 * the S3 server is down, publishing and reading an uncached file answer 503 with Retry-After;
 * the same once it has gone silent (it accepts connections and never answers), after
 * `ARTSVC_S3_TIMEOUT`, instead of never. A large file goes to a slow reader whole, and one whose
 * store goes silent mid-body is cut after that timeout.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { get, type IncomingMessage } from 'node:http'
import { createServer, type Socket } from 'node:net'
import { after, before, type TestContext, test } from 'node:test'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import {
  type OidcProvider,
  type S3Server,
  startOidcProvider,
  startS3,
  startTcpRelay,
  tempDir,
} from '@gatehouse/testkit'
import { S3BlobStore } from '../src/storage/s3.ts'
import {
  AUDIENCE,
  baseEnv,
  bearer,
  frameOf,
  type Harness,
  mustPublish,
  publishZip,
  SCOPE,
  startArtsvc,
} from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

let s3: S3Server
let op: OidcProvider
let h: Harness
let client: S3Client

const s3Env = (bucket: string) => ({
  ARTSVC_STORAGE_BACKEND: 's3',
  ARTSVC_S3_BUCKET: bucket,
  ARTSVC_S3_PREFIX: 'tenant-a/',
  ARTSVC_S3_ENDPOINT: s3.endpoint,
  ARTSVC_S3_USE_PATH_STYLE: 'true',
})

before(async () => {
  s3 = await startS3()
  await s3.createBucket('artifacts')
  op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
  const credentials = { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
  h = await startArtsvc({ op, env: s3Env('artifacts'), deps: { s3Credentials: credentials } })
  client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
})
after(async () => {
  client?.destroy()
  await h?.close()
  await op?.stop()
  await s3?.stop()
})

test('published files are stored in the bucket byte for byte and served by the content origin', async () => {
  const payload = randomBytes(200_000)
  const alice = await bearer(op, 'alice')
  const p = await mustPublish(h, alice, sampleBundle([{ name: 'blob.bin', data: payload }]))
  const sha = createHash('sha256').update(payload).digest('hex')
  const obj = await client.send(
    new GetObjectCommand({ Bucket: 'artifacts', Key: `tenant-a/objects/${sha.slice(0, 2)}/${sha.slice(2)}` }),
  )
  const stored = Buffer.from(await obj.Body!.transformToByteArray())
  assert.equal(stored.length, payload.length)
  assert.ok(stored.equals(payload))
  const keys = (await client.send(new ListObjectsV2Command({ Bucket: 'artifacts' }))).Contents!.map((c) => c.Key!)
  assert.ok(keys.every((k) => k.startsWith('tenant-a/')))
  assert.ok(keys.some((k) => k.startsWith('tenant-a/manifests/')))
  const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: alice })).text())
  const served = await fetch(frame.replace('index.html', 'blob.bin'))
  assert.equal(served.status, 200)
  assert.ok(Buffer.from(await served.arrayBuffer()).equals(payload))
  assert.equal((await fetch(`${h.base}/readyz`)).status, 204)
  // A byte range of a file larger than the small-file cache is read from S3 as a range.
  const large = randomBytes(400_000)
  const q = await mustPublish(h, alice, sampleBundle([{ name: 'video.mp4', data: large }]))
  const qFrame = frameOf(await (await fetch(`${h.base}/a/${q.artifact}`, { headers: alice })).text())
  const part = await fetch(qFrame.replace('index.html', 'video.mp4'), { headers: { range: 'bytes=300000-300099' } })
  assert.equal(part.status, 206)
  assert.equal(part.headers.get('content-range'), `bytes 300000-300099/${large.length}`)
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(large.subarray(300_000, 300_100)))
})

test('two commits of one upload at once: one version, and the loser removes the manifest it wrote', async () => {
  const alice = await bearer(op, 'alice')
  const manifests = async () =>
    (
      (await client.send(new ListObjectsV2Command({ Bucket: 'artifacts', Prefix: 'tenant-a/manifests/' }))).Contents ??
      []
    ).map((c) => c.Key!)
  const before = await manifests()
  const created = await fetch(`${h.base}/api/v1/artifacts/uploads`, {
    method: 'POST',
    headers: { ...alice, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'Raced', entrypoint: 'index.html' }),
  })
  const session = (await created.json()) as { id: string; upload_url: string; upload_token: string }
  const put = await fetch(session.upload_url, {
    method: 'PUT',
    headers: { 'x-artsvc-upload-token': session.upload_token, 'content-type': 'application/zip' },
    body: new Uint8Array(sampleBundle([{ name: 'a.bin', data: randomBytes(50_000) }])),
  })
  assert.equal(put.status, 200)
  const commit = () =>
    fetch(`${h.base}/api/v1/uploads/${session.id}/commit`, {
      method: 'POST',
      headers: { ...alice, 'x-artsvc-upload-token': session.upload_token },
    })
  const statuses = (await Promise.all([commit(), commit()])).map((r) => r.status).sort()
  assert.deepEqual(statuses, [201, 409])
  assert.equal((await manifests()).length, before.length + 1)
})

test('readiness fails without the bucket; startup refuses a missing bucket with one line', async () => {
  const other = await startArtsvc({
    op,
    env: s3Env('missing-bucket'),
    deps: { s3Credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } },
  })
  try {
    assert.equal((await fetch(`${other.base}/readyz`)).status, 503)
  } finally {
    await other.close()
  }
  // The standard credential chain (environment variables) in a real process.
  const staging = tempDir('artsvc-s3-staging-')
  const env = {
    ...baseEnv(staging.path, 1, op),
    ...s3Env('missing-bucket'),
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    PATH: process.env.PATH ?? '',
  }
  // Asynchronously: s3rver runs in this process and must keep answering.
  const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [new URL('../src/main.ts', import.meta.url).pathname],
      { env, encoding: 'utf8', timeout: 60_000 },
      (err, _out, stderr) => resolve({ status: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
    )
  })
  assert.equal(r.status, 1)
  assert.match(r.stderr, /^artsvc: storage \(s3\) is unusable: /)
  assert.equal(r.stderr.trim().split('\n').length, 1)
  staging.remove()
})

test('the S3 server down: a publish and an uncached file answer 503 with Retry-After; readiness fails', async (t) => {
  const own = await startS3()
  await own.createBucket('outage')
  const other = await startArtsvc({
    op,
    env: { ...s3Env('outage'), ARTSVC_S3_ENDPOINT: own.endpoint },
    deps: { s3Credentials: { accessKeyId: own.accessKeyId, secretAccessKey: own.secretAccessKey } },
  })
  t.after(async () => {
    await other.close()
    await own.stop()
  })
  const alice = await bearer(op, 'alice')
  const p = await mustPublish(other, alice, sampleBundle([{ name: 'later.txt', data: 'never fetched before' }]))
  const frame = frameOf(await (await fetch(`${other.base}/a/${p.artifact}`, { headers: alice })).text())

  await own.stop()
  const refused = await publishZip(other, alice, sampleBundle([{ name: 'new.bin', data: randomBytes(1000) }]))
  assert.equal(refused.status, 503, JSON.stringify(refused.body))
  assert.deepEqual(refused.body.error, { code: 'storage_unavailable', message: 'artifact storage is unavailable' })
  const file = await fetch(frame.replace('index.html', 'later.txt'))
  assert.equal(file.status, 503)
  assert.equal(file.headers.get('retry-after'), '5')
  assert.equal((await fetch(`${other.base}/readyz`)).status, 503)
})

test('the S3 server gone silent: a publish and an uncached file answer 503 after the S3 timeout, not never', async (t) => {
  const own = await startS3()
  await own.createBucket('silent')
  const other = await startArtsvc({
    op,
    env: { ...s3Env('silent'), ARTSVC_S3_ENDPOINT: own.endpoint, ARTSVC_S3_TIMEOUT: '300ms' },
    deps: { s3Credentials: { accessKeyId: own.accessKeyId, secretAccessKey: own.secretAccessKey } },
  })
  const held: Socket[] = []
  const silent = createServer((socket) => {
    held.push(socket)
    socket.on('error', () => {})
    socket.resume()
  })
  t.after(async () => {
    await other.close()
    for (const socket of held) socket.destroy()
    silent.close()
    await own.stop()
  })
  const alice = await bearer(op, 'alice')
  const p = await mustPublish(other, alice, sampleBundle([{ name: 'later.txt', data: 'never fetched before' }]))
  const frame = frameOf(await (await fetch(`${other.base}/a/${p.artifact}`, { headers: alice })).text())

  // The same address now accepts connections and never answers: a frozen host, a partition.
  await own.stop()
  silent.listen(Number(new URL(own.endpoint).port), '127.0.0.1')
  await once(silent, 'listening')
  // Bounded here only so that a hang fails the test instead of stalling it.
  const signal = () => AbortSignal.timeout(30_000)
  const file = await fetch(frame.replace('index.html', 'later.txt'), { signal: signal() })
  assert.equal(file.status, 503)
  assert.equal(file.headers.get('retry-after'), '5')
  assert.ok(held.length > 0, 'the request reached the silent server')
  const refused = await publishZip(other, alice, sampleBundle([{ name: 'new.bin', data: randomBytes(1000) }]))
  assert.equal(refused.status, 503, JSON.stringify(refused.body))
  assert.equal(refused.body.error && (refused.body.error as { code: string }).code, 'storage_unavailable')
  assert.equal((await fetch(`${other.base}/readyz`, { signal: signal() })).status, 503)
})

/**
 * A file far larger than the socket buffers between a reader and S3 hold (and past the
 * small-file cache), published on an S3 server of its own, and its URL on a second artsvc of the
 * same database that reaches S3 through a relay with a 1 s S3 timeout. The publisher keeps the
 * default timeout: 24 MiB sent to s3rver on a busy machine can pause for longer.
 */
async function largeFileThroughRelay(t: TestContext, bucket: string) {
  const own = await startS3()
  await own.createBucket(bucket)
  const relay = await startTcpRelay(t, { host: '127.0.0.1', port: Number(new URL(own.endpoint).port) })
  const shared = tempDir('artsvc-s3-shared-')
  const databaseUrl = `sqlite:${shared.path}/artsvc.db`
  const deps = { s3Credentials: { accessKeyId: own.accessKeyId, secretAccessKey: own.secretAccessKey } }
  const publisher = await startArtsvc({
    op,
    databaseUrl,
    env: { ...s3Env(bucket), ARTSVC_S3_ENDPOINT: own.endpoint },
    deps,
  })
  const reader = await startArtsvc({
    op,
    databaseUrl,
    env: { ...s3Env(bucket), ARTSVC_S3_ENDPOINT: `http://127.0.0.1:${relay.port}`, ARTSVC_S3_TIMEOUT: '1s' },
    deps,
  })
  t.after(async () => {
    await reader.close()
    await publisher.close()
    await own.stop()
    shared.remove()
  })
  const payload = randomBytes(24 * 1024 * 1024)
  const alice = await bearer(op, 'alice')
  const p = await mustPublish(publisher, alice, sampleBundle([{ name: 'big.bin', data: payload }]))
  const frame = frameOf(await (await fetch(`${publisher.base}/a/${p.artifact}`, { headers: alice })).text())
  return { relay, payload, url: frame.replace(publisher.content, reader.content).replace('index.html', 'big.bin') }
}

/** Download `url`, calling `afterFirst` with the response once the first bytes are in. */
function download(url: string, afterFirst: (res: IncomingMessage) => void): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    get(url, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => {
        if (chunks.push(chunk) === 1) afterFirst(res)
      })
      res.on('end', () => resolve(Buffer.concat(chunks)))
      res.on('error', reject)
    }).on('error', reject)
  })
}

test('a client that reads a large file slowly gets all of it: the S3 timeout bounds a silent store, not a paused reader', async (t) => {
  const { payload, url } = await largeFileThroughRelay(t, 'slow')
  const received = await download(url, (res) => {
    // A reader on a slow link, or one that stops for a while: well past the S3 timeout.
    res.pause()
    setTimeout(() => res.resume(), 4000)
  })
  assert.equal(received.length, payload.length)
  assert.ok(received.equals(payload))
})

test('S3 gone silent in the middle of a file: the download is cut after the S3 timeout, not held for ever', async (t) => {
  const { relay, url } = await largeFileThroughRelay(t, 'frozen')
  const started = Date.now()
  await assert.rejects(
    download(url, () => relay.freeze()),
    (err: Error) => /aborted|ECONNRESET|socket hang up/.test(err.message),
  )
  // 1 s of silence, checked every 250 ms; far below the time the test would take to time out.
  assert.ok(Date.now() - started < 10_000, `cut after ${Date.now() - started} ms`)
})

test('a blob read in paused mode (as the small-file cache reads) ends too when S3 goes silent mid-body', async (t) => {
  const relay = await startTcpRelay(t, { host: '127.0.0.1', port: Number(new URL(s3.endpoint).port) })
  const store = new S3BlobStore({
    bucket: 'artifacts',
    prefix: 'reads/',
    region: s3.region,
    endpoint: `http://127.0.0.1:${relay.port}`,
    forcePathStyle: true,
    timeoutMs: 1000,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  })
  t.after(() => store.close())
  const sha = 'ab'.repeat(32)
  await client.send(
    new PutObjectCommand({ Bucket: 'artifacts', Key: `reads/objects/ab/${sha.slice(2)}`, Body: randomBytes(24 << 20) }),
  )
  const body = await store.read(sha)
  const started = Date.now()
  await assert.rejects(
    (async () => {
      for await (const _ of body) relay.freeze()
    })(),
    /S3 sent nothing for 1000 ms/,
  )
  assert.ok(Date.now() - started < 10_000, `ended after ${Date.now() - started} ms`)
})
