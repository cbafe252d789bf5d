/** External provider endpoints (spec Part A): /v1/providers/extdns/... */
import type { HttpApp } from '@gatehouse/kit'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { listAudit } from '../audit/store.ts'
import { expectedRevision } from '../revisions.ts'
import { actorOf } from '../zones/routes.ts'
import { listAllowlistRevisions } from './allowlist.ts'
import type { ChangeInput, ProviderService } from './service.ts'
import { recordWire } from './wire.ts'

const ZoneParams = Type.Object({ zone: Type.String({ minLength: 1, maxLength: 254 }) })
const Revision = Type.String({ minLength: 1, maxLength: 200 })

const Change = Type.Object(
  {
    action: Type.Union([Type.Literal('upsert'), Type.Literal('delete')]),
    name: Type.String({ maxLength: 255 }),
    type: Type.String({ minLength: 1, maxLength: 16 }),
    ttl: Type.Optional(Type.Integer()),
    records: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 500 })),
    proxied: Type.Optional(Type.Boolean()),
    comment: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 50 })),
  },
  { additionalProperties: false },
)

const ChangesBody = Type.Object(
  {
    changes: Type.Array(Change, { minItems: 1, maxItems: 1000 }),
    confirm: Type.Optional(Type.Boolean()),
    force: Type.Optional(Type.Boolean()),
    expected_revision: Type.Optional(Revision),
  },
  { additionalProperties: false },
)

const AllowlistBody = Type.Object(
  {
    zones: Type.Array(Type.String({ minLength: 1, maxLength: 254 }), { maxItems: 1000 }),
    dry_run: Type.Optional(Type.Boolean()),
    expected_revision: Type.Optional(Revision),
  },
  { additionalProperties: false },
)

function ifMatch(req: FastifyRequest): string | undefined {
  const h = req.headers['if-match']
  return typeof h === 'string' ? h : undefined
}

const meta = (req: FastifyRequest) => ({ requestId: String(req.id), actor: actorOf(req) })

export function providerRoutes(app: HttpApp, service: ProviderService) {
  const tags = ['provider']
  app.get('/v1/providers/extdns/zones', { schema: { tags, summary: 'allowlisted provider zones' } }, async () =>
    service.zones(),
  )

  app.get(
    '/v1/providers/extdns/zones/:zone/records',
    { schema: { tags, params: ZoneParams, summary: 'records with the synthetic revision (ETag and body)' } },
    async (req, reply) => {
      const r = await service.records((req.params as { zone: string }).zone)
      reply.header('etag', `"${r.revision}"`)
      return { zone: r.zone, revision: r.revision, name_servers: r.name_servers, records: r.records.map(recordWire) }
    },
  )

  app.post(
    '/v1/providers/extdns/zones/:zone/plans',
    {
      schema: {
        tags,
        params: ZoneParams,
        body: ChangesBody,
        summary: 'plan: record-ID deletes, updates, creates; writes nothing',
      },
    },
    async (req, reply) => {
      const body = req.body as ChangeInput
      const result = await service.plan(
        (req.params as { zone: string }).zone,
        body,
        expectedRevision(ifMatch(req), body.expected_revision),
      )
      reply.header('etag', `"${result.revision}"`)
      return result
    },
  )

  app.post(
    '/v1/providers/extdns/zones/:zone/changes',
    { schema: { tags, params: ZoneParams, body: ChangesBody, summary: 'apply (confirm: true), verify, audit' } },
    async (req, reply) => {
      const body = req.body as ChangeInput
      const result = await service.change(
        (req.params as { zone: string }).zone,
        body,
        expectedRevision(ifMatch(req), body.expected_revision),
        meta(req),
      )
      reply.header('etag', `"${result.revision}"`)
      return result
    },
  )

  app.get(
    '/v1/providers/extdns/zones/:zone/audit',
    {
      schema: {
        tags,
        params: ZoneParams,
        summary: 'audit events of provider changes (committed, rolled back, refused), newest first',
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
            before: Type.Optional(Type.Integer({ minimum: 1 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const q = req.query as { limit?: number; before?: number }
      const zone = await service.allowedZone((req.params as { zone: string }).zone)
      const limit = q.limit ?? 100
      const rows = await listAudit(service.deps.db, `extdns:${zone}`, { limit, before: q.before })
      return {
        zone,
        events: rows.map((r) => ({ ...r, detail: JSON.parse(r.detail) as Record<string, unknown> })),
        next_before: rows.length === limit ? rows[rows.length - 1]!.id : null,
      }
    },
  )

  app.get(
    '/v1/providers/extdns/allowlist',
    { schema: { tags, summary: 'the allowlist in force' } },
    async (_req, reply) => {
      const list = await service.allowlist()
      reply.header('etag', `"${list.revision}"`)
      return list
    },
  )

  app.put(
    '/v1/providers/extdns/allowlist',
    { schema: { tags, body: AllowlistBody, summary: 'validate (dry_run) or commit a new allowlist revision' } },
    async (req, reply) => {
      const body = req.body as { zones: string[]; dry_run?: boolean; expected_revision?: string }
      const result = await service.putAllowlist(body, expectedRevision(ifMatch(req), body.expected_revision), meta(req))
      reply.header('etag', `"${result.revision}"`)
      return result
    },
  )

  app.get(
    '/v1/providers/extdns/allowlist/revisions',
    {
      schema: {
        tags,
        summary: 'committed allowlist revisions, newest first',
        querystring: Type.Object(
          { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const rows = await listAllowlistRevisions(service.deps.db, (req.query as { limit?: number }).limit ?? 100)
      return {
        revisions: rows.map((r) => ({
          revision: r.revision,
          zones: JSON.parse(r.zones) as string[],
          committed_at: r.committed_at,
          actor: r.actor,
          request_id: r.request_id,
        })),
      }
    },
  )
}
