/**
 * Publishing endpoints (hook token auth, no reader session):
 *   POST /hooks/{token}            compatibility payload (JSON or form payload=), or a plain
 *                                  message with ntfy-style Title/Priority/Tags headers (ntfy.ts)
 *   POST /api/v1/notifications     native card v1; Authorization: Bearer <token>
 *   POST /api/v1/messages          text/plain, or JSON {text, source}; Authorization: Bearer <token>
 */
import type { HttpApp } from '@gatehouse/kit'
import { bearerToken } from '@gatehouse/kit/credentials.ts'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { carriesContext, storeContexts, takeContexts } from '../actions/card-context.ts'
import type { Context } from '../context.ts'
import type { WebhookRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { authenticateToken } from '../webhooks/service.ts'
import { cardDraft, parseCard } from './card.ts'
import { compatDraft, decodeCompatBody } from './compat.ts'
import type { Draft } from './draft.ts'
import { DeliveryLookups } from './lookups.ts'
import { messageDraft, parseMessage } from './message.ts'
import { isPlainBody, plainDraft, withPublishHeaders } from './ntfy.ts'
import { store } from './service.ts'
import { notificationWriter } from './write-queue.ts'

function bearer(req: FastifyRequest): string | undefined {
  return bearerToken(req.headers.authorization) ?? undefined
}

export function ingestRoutes(app: HttpApp, ctx: Context) {
  const received = ctx.metrics.counter('notifications_received_total', 'Notifications stored, by kind', ['kind'])
  const rejected = ctx.metrics.counter('deliveries_rejected_total', 'Deliveries refused, by error code', ['code'])

  // Token authentication runs before the body is parsed: an unknown or revoked token
  // learns nothing about payload validation.
  const hooks = new WeakMap<FastifyRequest, WebhookRow>()
  const lookups = new DeliveryLookups(ctx.database)
  const byTokenHash = (hash: string) => lookups.hook(hash)
  const write = notificationWriter(ctx.database, ctx.metrics)
  const withToken = (token: (req: FastifyRequest) => string | undefined) => async (req: FastifyRequest) => {
    try {
      hooks.set(req, await authenticateToken(byTokenHash, token(req)))
    } catch (err) {
      rejected.inc({ code: (err as { code?: string }).code ?? 'internal' })
      throw err
    }
  }
  const pathToken = withToken((req) => (req.params as { token?: string }).token)
  const bearerToken = withToken(bearer)

  const accept = async (req: FastifyRequest, parse: () => Draft) => {
    try {
      const draft = parse()
      const stored = await store(lookups, hooks.get(req)!, draft, write)
      ctx.stream.wake()
      received.inc({ kind: draft.kind })
      return stored
    } catch (err) {
      rejected.inc({ code: (err as { code?: string }).code ?? 'internal' })
      throw err
    }
  }

  // Compatibility and message bodies arrive in many content types and are parsed here,
  // so this scope takes every body as text (the body limit still applies).
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body))

    scope.post(
      '/hooks/:token',
      {
        onRequest: pathToken,
        schema: {
          summary: 'Publish through a hook: Slack/Mattermost JSON, payload= form, or a plain message (ntfy style)',
          description:
            'The path token is the only credential. A body that is neither a JSON object nor a payload= form is the message text; the Title, Priority (1-5, min, low, default, high, urgent, max) and Tags headers set the title, severity and tags. Answers the literal body "ok".',
          tags: ['publishing'],
          params: Type.Object({ token: Type.String({ maxLength: 512 }) }),
        },
      },
      async (req, reply) => {
        const body = typeof req.body === 'string' ? req.body : ''
        const type = req.headers['content-type']
        await accept(req, () =>
          withPublishHeaders(
            isPlainBody(type, body) ? plainDraft(body) : compatDraft(decodeCompatBody(type, body)),
            req.headers,
          ),
        )
        // Slack-compatible senders (Grafana among them) expect the literal body "ok".
        return reply.type('text/plain; charset=utf-8').send('ok')
      },
    )

    scope.post(
      '/api/v1/messages',
      { onRequest: bearerToken, schema: { summary: 'Publish a text message (hook token)', tags: ['publishing'] } },
      async (req, reply) => {
        const body = typeof req.body === 'string' ? req.body : ''
        const stored = await accept(req, () => messageDraft(parseMessage(req.headers['content-type'], body)))
        return reply.code(201).send({ notification: stored })
      },
    )
  })

  app.post(
    '/api/v1/notifications',
    { onRequest: bearerToken, schema: { summary: 'Publish a notification card (hook token)', tags: ['publishing'] } },
    async (req, reply) => {
      // Action context is sealed apart from the card (actions/card-context.ts): the key is
      // checked before anything is stored.
      const key = carriesContext(req.body) ? await ctx.actionKeys.forRead() : undefined
      let contexts = new Map<number, string>()
      const stored = await accept(req, () => {
        if (req.body === undefined) throw errors.invalid_card('card', 'a JSON body is required')
        const card = parseCard(req.body)
        contexts = takeContexts(card)
        return cardDraft(card)
      })
      if (key) await storeContexts(ctx.database.db, key, stored.id, contexts)
      return reply.code(201).send({ notification: stored })
    },
  )
}
