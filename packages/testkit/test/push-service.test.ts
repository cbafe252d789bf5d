import assert from 'node:assert/strict'
import { request } from 'node:https'
import { after, before, test } from 'node:test'
import webpush from 'web-push'
import { createTestCa, type PushServiceDouble, startPushService } from '../src/index.ts'

const ca = createTestCa()
let push: PushServiceDouble
before(async () => {
  push = await startPushService(ca)
})
after(async () => {
  await push.close()
  ca.remove()
})

const vapid = webpush.generateVAPIDKeys()

/** A push as web-push builds it, with some headers overridden or removed (undefined). */
async function send(
  sub: ReturnType<PushServiceDouble['subscribe']>,
  payload: string,
  change: Record<string, string | undefined> = {},
  options: webpush.RequestOptions = {},
) {
  const d = webpush.generateRequestDetails(sub, payload, {
    vapidDetails: { subject: 'mailto:test@example.org', publicKey: vapid.publicKey, privateKey: vapid.privateKey },
    TTL: 60,
    urgency: 'high',
    ...options,
  })
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries({ ...d.headers })) headers[k.toLowerCase()] = String(v)
  for (const [k, v] of Object.entries(change)) {
    if (v === undefined) delete headers[k]
    else headers[k] = v
  }
  return new Promise<number>((resolve, reject) => {
    const req = request(d.endpoint, { method: 'POST', headers, ca: ca.ca }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(d.body ?? undefined)
  })
}

test('the push service double decrypts web-push messages and checks VAPID, TTL and urgency', async () => {
  const sub = push.subscribe()
  assert.equal(await send(sub, 'héllo, push'), 201)
  const [got] = await push.waitFor(1)
  assert.equal(got?.plaintext, 'héllo, push')
  assert.equal(got?.ttl, 60)
  assert.equal(got?.urgency, 'high')
  assert.equal(got?.vapid.key, vapid.publicKey)
  assert.equal(got?.vapid.sub, 'mailto:test@example.org')

  // What a real push service refuses is refused (and recorded), never silently accepted.
  assert.equal(await send(sub, 'no ttl', { ttl: undefined }), 400)
  assert.equal(await send(sub, 'bad urgency', { urgency: 'urgent' }), 400)
  assert.equal(await send(sub, 'no vapid', { authorization: undefined }), 401)
  const other = webpush.generateVAPIDKeys()
  assert.equal(await send(sub, 'key mismatch', { authorization: `vapid t=x.y.z, k=${other.publicKey}` }), 401)
  assert.equal(await send(sub, 'old encoding', {}, { contentEncoding: 'aesgcm' }), 415)
  // Encrypted for another subscription's keys: cannot be decrypted.
  const stranger = push.subscribe()
  assert.equal(await send({ ...sub, keys: stranger.keys }, 'wrong keys'), 400)
  assert.equal(push.refused.length, 6)
  assert.equal(push.received.length, 1)

  // An expired subscription answers 410 Gone; an unknown one 404.
  push.expire(sub)
  assert.equal(await send(sub, 'gone'), 410)
  assert.equal(await send({ ...sub, endpoint: `${push.origin}/push/00000000-0000-0000-0000-000000000000` }, 'x'), 404)
})
