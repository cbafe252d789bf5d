/**
 * Desktop sign-in endpoints (design in service.ts and README "Desktop sign-in").
 *   POST /api/v1/auth/desktop                    the app starts: {client_name} -> 201 {request_id, device_code, user_code, verification_url, expires_at, interval}
 *   POST /api/v1/auth/desktop/token              the app polls: {device_code} -> 200 {token, expires_at, user} once, 428 while pending
 *   GET  /api/v1/auth/desktop/{id}               signed-in reader: the request to approve (never its code)
 *   POST /api/v1/auth/desktop/{id}/approve       signed-in reader: {user_code} typed from the app
 *   POST /api/v1/auth/desktop/{id}/deny          signed-in reader
 */
import type { HttpApp } from '@gatehouse/kit'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { readerOf } from '../auth/guard.ts'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { userResponse } from '../users/service.ts'
import { approve, DESKTOP_TTL_MS, deny, POLL_INTERVAL_S, pendingRequest, redeem, startDesktopLogin } from './service.ts'

/** Starts per client address and window; polls per address and window (an app polls every 2 s). */
const STARTS_PER_WINDOW = 10
const POLLS_PER_WINDOW = 90
const WINDOW = 60_000

const Start = Type.Object(
  { client_name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f]+$' }) },
  { additionalProperties: false },
)
const Poll = Type.Object(
  { device_code: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
)
const Approve = Type.Object(
  { user_code: Type.String({ minLength: 1, maxLength: 32 }) },
  { additionalProperties: false },
)
const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) })

function requestResponse(row: Awaited<ReturnType<typeof pendingRequest>>) {
  return {
    request_id: row.id,
    client_name: row.client_name,
    client_address: row.client_address,
    status: row.status,
    created_at: row.created_at,
    expires_at: row.expires_at,
  }
}

export function desktopRoutes(app: HttpApp, ctx: Context) {
  const db = ctx.database.db
  const handoffs = ctx.metrics.counter('desktop_logins_total', 'Desktop sign-in handoffs by result', ['result'])
  const limit = (max: number) => {
    const check = app.createRateLimit({ max, timeWindow: WINDOW, ipv6Subnet: 64 })
    return async (req: FastifyRequest) => {
      const r = await check(req)
      if (r.isAllowed || !r.isExceeded) return
      const seconds = Math.max(1, r.ttlInSeconds)
      throw errors.desktop_throttled.with({ headers: { 'retry-after': String(seconds) } }, seconds)
    }
  }
  const requireAuth = async () => {
    if (!ctx.config.auth) throw errors.desktop_login_failed('reader authentication is off (development mode)')
  }

  app.post(
    '/api/v1/auth/desktop',
    {
      onRequest: [requireAuth, limit(STARTS_PER_WINDOW)],
      schema: { summary: 'Start a desktop sign-in request', tags: ['auth'], body: Start },
    },
    async (req, reply) => {
      const { row, deviceCode, userCode } = await startDesktopLogin(db, req.body.client_name, req.ip)
      return reply.code(201).send({
        request_id: row.id,
        device_code: deviceCode,
        user_code: userCode,
        verification_url: `${ctx.config.publicOrigin}/#/desktop/${row.id}`,
        expires_at: row.expires_at,
        expires_in: DESKTOP_TTL_MS / 1000,
        interval: POLL_INTERVAL_S,
      })
    },
  )

  app.post(
    '/api/v1/auth/desktop/token',
    {
      onRequest: [requireAuth, limit(POLLS_PER_WINDOW)],
      schema: { summary: 'Poll a desktop sign-in for its session token', tags: ['auth'], body: Poll },
    },
    async (req) => {
      let redeemed: Awaited<ReturnType<typeof redeem>>
      try {
        redeemed = await redeem(db, req.body.device_code, ctx.config)
      } catch (err) {
        if ((err as { code?: string }).code !== 'desktop_login_pending') handoffs.inc({ result: 'failed' })
        throw err
      }
      handoffs.inc({ result: 'ok' })
      const { token, user, expiresAt } = redeemed
      return { token, token_type: 'Bearer', expires_at: expiresAt, user: userResponse(user) }
    },
  )

  app.get(
    '/api/v1/auth/desktop/:id',
    {
      onRequest: ctx.guard.signedIn,
      schema: { summary: 'Get a desktop sign-in request to approve', tags: ['auth'], params: IdParams },
    },
    async (req) => {
      return { request: requestResponse(await pendingRequest(db, req.params.id)) }
    },
  )

  app.post(
    '/api/v1/auth/desktop/:id/approve',
    {
      onRequest: ctx.guard.signedIn,
      schema: {
        summary: 'Approve a desktop sign-in with the code shown in the app',
        tags: ['auth'],
        params: IdParams,
        body: Approve,
      },
    },
    async (req) => {
      const row = await approve(db, readerOf(req), req.params.id, req.body.user_code)
      return { request: requestResponse(row) }
    },
  )

  app.post(
    '/api/v1/auth/desktop/:id/deny',
    {
      onRequest: ctx.guard.signedIn,
      schema: { summary: 'Deny a desktop sign-in request', tags: ['auth'], params: IdParams },
    },
    async (req, reply) => {
      await deny(db, req.params.id)
      return reply.code(204).send()
    },
  )
}
