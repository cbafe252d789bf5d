/**
 * Webhook administration (administrators only).
 *   POST /api/v1/webhooks                 {channel, channel_locked?} -> path /hooks/{token}, shown once
 *   GET  /api/v1/webhooks                 non-secret metadata
 *   POST /api/v1/webhooks/{id}/revoke     disables future deliveries at once
 *   POST /api/v1/webhooks/{id}/new-url    another active URL, same channel and override policy
 *   POST /api/v1/admin/import/webhooks    strict {dry_run, webhooks: [{id, channel, channel_locked}]}
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { recordAudit } from '../audit/store.ts'
import { readerOf } from '../auth/guard.ts'
import type { Context } from '../context.ts'
import { ChannelName } from '../names.ts'
import { importWebhooks } from './import.ts'
import { createWebhook, newUrl, revoke } from './service.ts'
import { listWebhooks, metadata } from './store.ts'

const CreateWebhook = Type.Object(
  { channel: ChannelName, channel_locked: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
)

/** Imported ids become URL tokens, so they must be URL-safe and long enough not to be guessed. */
const ImportedId = Type.String({ pattern: '^[A-Za-z0-9_-]{16,256}$' })

const ImportBody = Type.Object(
  {
    dry_run: Type.Boolean(),
    webhooks: Type.Array(
      Type.Object(
        { id: ImportedId, channel: ChannelName, channel_locked: Type.Optional(Type.Boolean()) },
        { additionalProperties: false },
      ),
      { maxItems: 5000 },
    ),
  },
  { additionalProperties: false },
)

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) })

export function webhookRoutes(app: HttpApp, ctx: Context) {
  const admin = { onRequest: ctx.guard.admin }

  app.post(
    '/api/v1/webhooks',
    {
      ...admin,
      schema: {
        summary: 'Create a webhook for a channel (the hook URL is shown once)',
        tags: ['webhooks'],
        body: CreateWebhook,
      },
    },
    async (req, reply) => {
      const hook = await createWebhook(
        ctx.database.db,
        readerOf(req),
        req.body.channel,
        req.body.channel_locked ?? false,
      )
      return reply.code(201).send({ webhook: hook })
    },
  )

  app.get(
    '/api/v1/webhooks',
    { ...admin, schema: { summary: 'List webhooks (metadata, never the secret)', tags: ['webhooks'] } },
    async () => ({ webhooks: (await listWebhooks(ctx.database.db)).map(metadata) }),
  )

  app.post(
    '/api/v1/webhooks/:id/revoke',
    { ...admin, schema: { summary: 'Revoke a webhook', tags: ['webhooks'], params: IdParams } },
    async (req) => {
      const { hook } = await revoke(ctx.database.db, readerOf(req), req.params.id)
      return { webhook: metadata(hook) }
    },
  )

  app.post(
    '/api/v1/webhooks/:id/new-url',
    {
      ...admin,
      schema: {
        summary: 'Issue another URL for a webhook (same channel and policy)',
        tags: ['webhooks'],
        params: IdParams,
      },
    },
    async (req, reply) => {
      const webhook = await newUrl(ctx.database.db, readerOf(req), req.params.id)
      return reply.code(201).send({ webhook })
    },
  )

  app.post(
    '/api/v1/admin/import/webhooks',
    {
      ...admin,
      schema: {
        summary: 'Import webhooks from another system (dry run or commit)',
        tags: ['webhooks'],
        body: ImportBody,
      },
    },
    async (req) => {
      const result = await importWebhooks(ctx.database.db, req.body.dry_run, req.body.webhooks)
      // Counts only: imported ids are the old system's secret URL parts.
      if (!req.body.dry_run) {
        await recordAudit(ctx.database.db, readerOf(req), 'webhook.import', `${req.body.webhooks.length} webhooks`, {
          created: result.created,
          existing: result.existing,
        })
      }
      return result
    },
  )
}
