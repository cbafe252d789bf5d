/**
 * Web Push for readers (paths ours; the spec leaves them unshown):
 *   GET    /api/v1/push/key                         the VAPID public key (applicationServerKey)
 *   GET    /api/v1/push/subscriptions               the reader's own subscriptions
 *   POST   /api/v1/push/subscriptions               subscribe this browser: PushSubscription.toJSON()
 *   DELETE /api/v1/push/subscriptions/{id}          revoke one of the reader's own (owner only)
 *   GET    /api/v1/push/preferences                 per-channel choice for every visible channel
 *   PUT    /api/v1/push/preferences/{channel}       {mode: all | important | off}
 *   POST   /api/v1/push/test                        a test push to each of the reader's own browsers
 */
import { createECDH } from 'node:crypto'
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { readerOf } from '../auth/guard.ts'
import { visibleChannel } from '../channels/access.ts'
import { listVisibleChannels } from '../channels/store.ts'
import type { Context } from '../context.ts'
import type { PushSubscriptionRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { endpointProblem, type PushSender } from './sender.ts'
import { deleteOwnSubscription, listSubscriptions, preferencesOf, saveSubscription, setPreference } from './store.ts'

/** Subscriptions per reader: one per browser and device is the normal case. */
export const MAX_SUBSCRIPTIONS = 20
/** One test push per reader in this long (ms): each one is a request to every browser's push service. */
export const TEST_INTERVAL_MS = 10_000

const B64URL = '^[A-Za-z0-9_-]+={0,2}$'

const SubscribeBody = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 2048 }),
    // Sent by PushSubscription.toJSON(); the push service's expiry, kept by the browser.
    expirationTime: Type.Optional(Type.Union([Type.Null(), Type.Number()])),
    keys: Type.Object(
      {
        p256dh: Type.String({ pattern: B64URL, minLength: 80, maxLength: 100 }),
        auth: Type.String({ pattern: B64URL, minLength: 16, maxLength: 32 }),
      },
      { additionalProperties: false },
    ),
    /** How the reader recognises this browser in their list ("Firefox on a laptop"). */
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false },
)

const Mode = Type.Union([Type.Literal('all'), Type.Literal('important'), Type.Literal('off')])

function subscriptionResponse(s: PushSubscriptionRow) {
  return {
    id: s.id,
    label: s.label,
    endpoint: s.endpoint,
    created_at: s.created_at,
    last_success_at: s.last_success_at,
    last_failure: s.last_failure,
  }
}

/** The browser's keys must be usable: a P-256 point (65 bytes, uncompressed) and a 16-byte secret. */
function keysProblem(p256dh: string, auth: string): string | undefined {
  const point = Buffer.from(p256dh, 'base64url')
  if (point.length !== 65 || point[0] !== 4) return 'keys.p256dh must be an uncompressed P-256 public key'
  try {
    const ecdh = createECDH('prime256v1')
    ecdh.generateKeys()
    ecdh.computeSecret(point)
  } catch {
    return 'keys.p256dh is not a point on P-256'
  }
  if (Buffer.from(auth, 'base64url').length !== 16) return 'keys.auth must be 16 bytes'
  return undefined
}

export function pushRoutes(app: HttpApp, ctx: Context, vapidPublicKey: string, sender: PushSender) {
  const { guard, config } = ctx
  const { db } = ctx.database
  /** When each reader last sent a test push (this process; bounded by the number of readers). */
  const lastTest = new Map<string, number>()

  app.get(
    '/api/v1/push/key',
    { onRequest: guard.signedIn, schema: { summary: 'Get the Web Push (VAPID) public key', tags: ['push'] } },
    async () => ({ public_key: vapidPublicKey }),
  )

  app.get(
    '/api/v1/push/subscriptions',
    { onRequest: guard.signedIn, schema: { summary: "List the reader's push subscriptions", tags: ['push'] } },
    async (req) => ({
      subscriptions: (await listSubscriptions(db, readerOf(req).id)).map(subscriptionResponse),
    }),
  )

  app.post(
    '/api/v1/push/subscriptions',
    {
      onRequest: guard.signedIn,
      schema: { summary: 'Subscribe this browser to Web Push', tags: ['push'], body: SubscribeBody },
    },
    async (req, reply) => {
      const reader = readerOf(req)
      const { endpoint, keys } = req.body
      const problem = endpointProblem(endpoint, config.pushAllowPrivateEndpoints) ?? keysProblem(keys.p256dh, keys.auth)
      if (problem) throw errors.invalid_push_subscription(problem)
      const mine = await listSubscriptions(db, reader.id)
      if (!mine.some((s) => s.endpoint === endpoint) && mine.length >= MAX_SUBSCRIPTIONS)
        throw errors.push_subscription_limit(MAX_SUBSCRIPTIONS)
      const { row, created } = await saveSubscription(db, {
        userId: reader.id,
        endpoint,
        p256dh: keys.p256dh,
        auth: keys.auth,
        label: req.body.label ?? new URL(endpoint).host,
      })
      return reply.code(created ? 201 : 200).send({ subscription: subscriptionResponse(row) })
    },
  )

  app.delete(
    '/api/v1/push/subscriptions/:id',
    {
      onRequest: guard.signedIn,
      schema: {
        summary: "Remove one of the reader's push subscriptions",
        tags: ['push'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      },
    },
    async (req, reply) => {
      // Another reader's subscription answers exactly like a missing one.
      if (!(await deleteOwnSubscription(db, readerOf(req).id, req.params.id)))
        throw errors.push_subscription_not_found(req.params.id)
      return reply.code(204).send()
    },
  )

  app.post(
    '/api/v1/push/test',
    {
      onRequest: guard.signedIn,
      schema: { summary: "Send a test push to each of the reader's browsers", tags: ['push'] },
    },
    async (req) => {
      const reader = readerOf(req)
      const now = Date.now()
      const wait = (lastTest.get(reader.id) ?? 0) + TEST_INTERVAL_MS - now
      if (wait > 0) throw errors.push_test_throttled(Math.ceil(wait / 1000))
      lastTest.set(reader.id, now)
      const message = JSON.stringify({
        v: 1,
        id: 0,
        channel: '',
        title: 'Test from Notify',
        body: 'Push notifications reach this browser.',
        severity: 'info',
        source: null,
        created_at: new Date(now).toISOString(),
        url: '/',
      })
      const subs = await listSubscriptions(db, reader.id)
      const results = await Promise.all(
        subs.map(async (s) => {
          const outcome = await sender.send(s, message, 'normal')
          if (outcome.result === 'gone') await deleteOwnSubscription(db, reader.id, s.id)
          return {
            id: s.id,
            label: s.label,
            result: outcome.result,
            status: 'status' in outcome ? (outcome.status ?? null) : null,
          }
        }),
      )
      return { results }
    },
  )

  app.get(
    '/api/v1/push/preferences',
    {
      onRequest: guard.signedIn,
      schema: { summary: "List the reader's push preference for every visible channel", tags: ['push'] },
    },
    async (req) => {
      const reader = readerOf(req)
      const prefs = await preferencesOf(db, reader.id)
      const channels = await listVisibleChannels(db, reader)
      return {
        channels: channels.map((c) => ({
          channel: c.name,
          display_name: c.display_name,
          mode: prefs.get(c.name) ?? 'all',
        })),
      }
    },
  )

  app.put(
    '/api/v1/push/preferences/:channel',
    {
      onRequest: guard.signedIn,
      schema: {
        summary: "Set the reader's push preference for a channel (all, important or off)",
        tags: ['push'],
        params: Type.Object({ channel: Type.String({ maxLength: 64 }) }),
        body: Type.Object({ mode: Mode }, { additionalProperties: false }),
      },
    },
    async (req) => {
      const reader = readerOf(req)
      const { channel } = await visibleChannel(db, reader, req.params.channel)
      await setPreference(db, reader.id, channel.name, req.body.mode)
      return { channel: channel.name, mode: req.body.mode }
    },
  )
}
