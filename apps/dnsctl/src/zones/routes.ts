/** HTTP endpoints of zones and RRsets (spec Part A "Endpoints"). */
import { type HttpApp, kitErrors } from '@gatehouse/kit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { Value } from 'typebox/value'
import { errors } from '../errors.ts'
import { expectedRevision, notModified } from '../revisions.ts'
import { relativeName, rrsets } from '../zonefile/index.ts'
import { decodeZoneBytes, NotUtf8Error } from '../zonefile/utf8.ts'
import { type ZoneState, zoneNameFromPath } from './model.ts'
import type { Page, ZoneService } from './service.ts'
import type { HistorySummary } from './store.ts'

const ZoneParams = Type.Object({ zone: Type.String({ minLength: 1, maxLength: 254 }) })

const Revision = Type.String({ minLength: 1, maxLength: 200 })

const HistoryParams = Type.Object({ zone: ZoneParams.properties.zone, revision: Revision })

/** Newest-first listings page with `limit` and `before` (the `id` of the last row seen). */
const PageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    before: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)
type PageQueryType = { limit?: number; before?: number }

function pageOf(query: PageQueryType): Page {
  return { limit: query.limit ?? 100, before: query.before }
}

/** A saved revision as the history endpoints show it (without its text). */
function historyItem(r: HistorySummary) {
  return {
    id: r.id,
    revision: r.revision,
    role: r.role,
    serial: r.serial,
    bytes: r.zone_bytes,
    saved_at: r.saved_at,
    replaced_by: r.reason,
    request_id: r.request_id,
  }
}

/** The `before` of the next page, or null when this page was the last. */
function nextBefore(rows: readonly { id: number }[], page: Page): number | null {
  return rows.length === page.limit ? rows[rows.length - 1]!.id : null
}

const PutZoneBody = Type.Object(
  {
    role: Type.Union([Type.Literal('primary'), Type.Literal('secondary')]),
    zone_text: Type.String({ minLength: 1 }),
    dry_run: Type.Optional(Type.Boolean()),
    expected_revision: Type.Optional(Revision),
  },
  { additionalProperties: false },
)

const DeleteZoneBody = Type.Union([
  Type.Object({ expected_revision: Type.Optional(Revision) }, { additionalProperties: false }),
  Type.Null(),
])

const Change = Type.Object(
  {
    action: Type.Union([Type.Literal('upsert'), Type.Literal('delete')]),
    name: Type.String({ maxLength: 255 }),
    type: Type.String({ minLength: 1, maxLength: 16 }),
    ttl: Type.Optional(Type.Integer()),
    records: Type.Optional(Type.Array(Type.String({ maxLength: 70000 }), { maxItems: 1000 })),
  },
  { additionalProperties: false },
)

const ChangesBody = Type.Object(
  {
    dry_run: Type.Optional(Type.Boolean()),
    expected_revision: Type.Optional(Revision),
    changes: Type.Array(Change, { minItems: 1, maxItems: 1000 }),
  },
  { additionalProperties: false },
)

const Diff = Type.Object({
  added: Type.Integer(),
  removed: Type.Integer(),
  unchanged: Type.Integer(),
  records: Type.Array(
    Type.Object({ op: Type.Union([Type.Literal('add'), Type.Literal('remove')]), record: Type.String() }),
  ),
})

const Changed = Type.Boolean({
  description:
    'false when the zone already has this content (records and role; the SOA serial aside): nothing was published, the serial and revision stay',
})

const PutZoneResult = Type.Object({
  name: Type.String(),
  role: Type.Union([Type.Literal('primary'), Type.Literal('secondary')]),
  revision: Type.String(),
  serial: Type.Integer(),
  records: Type.Integer(),
  dry_run: Type.Boolean(),
  created: Type.Boolean(),
  changed: Changed,
  warnings: Type.Array(Type.String()),
  diff: Type.Optional(Diff),
})

const ChangesResult = Type.Object({
  zone: Type.String(),
  dry_run: Type.Boolean(),
  changed: Changed,
  revision: Type.String(),
  previous_revision: Type.String(),
  serial: Type.Integer(),
  applied: Type.Integer(),
  records: Type.Integer(),
  diff: Type.Optional(Diff),
})

/** The actor named in X-Dns-Actor (recorded in the audit event), or "local". */
export function actorOf(req: FastifyRequest): string {
  const raw = req.headers['x-dns-actor']
  if (raw === undefined) return 'local'
  if (typeof raw !== 'string' || !/^[\x21-\x7e][\x20-\x7e]{0,127}$/.test(raw)) {
    throw kitErrors.invalid_request('X-Dns-Actor must be 1 to 128 printable ASCII characters')
  }
  return raw.trim()
}

function ifMatch(req: FastifyRequest): string | undefined {
  const h = req.headers['if-match']
  return typeof h === 'string' ? h : undefined
}

function etag(reply: FastifyReply, state: ZoneState) {
  reply.header('etag', `"${state.revision}"`)
}

function publicName(name: string): string {
  return name.replace(/\.$/, '')
}

function summary(state: ZoneState) {
  return {
    name: publicName(state.name),
    role: state.role,
    revision: state.revision,
    serial: state.serial,
    records: state.zone.records.length,
  }
}

/**
 * `PUT /v1/zones/{zone}` also takes the zone text itself as a `text/dns` body (RFC 4027's media
 * type for zone files), so `curl --data-binary @example.com.zone -H 'content-type: text/dns'`
 * works; `role` (default primary) and `dry_run` come from the query string and the revision from
 * `If-Match`.
 */
function acceptZoneText(app: HttpApp) {
  app.addContentTypeParser('text/dns', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, decodeZoneBytes(body as Buffer))
    } catch (err) {
      if (!(err instanceof NotUtf8Error)) throw err
      done(errors.invalid_zone_text(`line ${err.line}: ${err.message}`), undefined)
    }
  })
}

const ZoneTextQuery = Type.Object(
  {
    role: Type.Optional(Type.Union([Type.Literal('primary'), Type.Literal('secondary')])),
    dry_run: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  },
  { additionalProperties: false },
)
const checkZoneTextQuery = (q: unknown): q is { role?: 'primary' | 'secondary'; dry_run?: 'true' | 'false' } =>
  Value.Check(ZoneTextQuery, q)

async function zoneTextBody(req: FastifyRequest) {
  if (typeof req.body !== 'string') return
  const query = { ...(req.query as Record<string, unknown>) }
  if (!checkZoneTextQuery(query)) {
    throw kitErrors.invalid_request(
      'a text/dns body takes the query parameters role (primary or secondary) and dry_run (true or false) only',
    )
  }
  req.body = { role: query.role ?? 'primary', zone_text: req.body, dry_run: query.dry_run === 'true' }
}

export function zoneRoutes(app: HttpApp, service: ZoneService) {
  const meta = (req: FastifyRequest) => ({
    requestId: String(req.id),
    actor: actorOf(req),
    startedAt: performance.now(),
  })

  app.get('/v1/zones', { schema: { summary: 'List zones', tags: ['zones'] } }, async () => ({
    zones: service.list().map(summary),
  }))

  app.get(
    '/v1/zones/:zone',
    { schema: { summary: 'Get a zone with its zone text', tags: ['zones'], params: ZoneParams } },
    async (req, reply) => {
      const state = service.get(zoneNameFromPath((req.params as { zone: string }).zone))
      etag(reply, state)
      if (notModified(req.headers['if-none-match'], state.revision)) return reply.code(304).send()
      return { ...summary(state), zone_text: state.text }
    },
  )

  app.get(
    '/v1/zones/:zone/rrsets',
    { schema: { summary: "List a zone's RRsets", tags: ['zones'], params: ZoneParams } },
    async (req, reply) => {
      const state = service.get(zoneNameFromPath((req.params as { zone: string }).zone))
      etag(reply, state)
      if (notModified(req.headers['if-none-match'], state.revision)) return reply.code(304).send()
      return {
        zone: publicName(state.name),
        role: state.role,
        revision: state.revision,
        serial: state.serial,
        rrsets: rrsets(state.zone).map((s) => ({
          name: relativeName(s.name, state.name),
          type: s.type,
          ttl: s.ttl,
          records: s.rdata,
        })),
      }
    },
  )

  acceptZoneText(app)
  app.put(
    '/v1/zones/:zone',
    {
      schema: {
        summary: 'Create or replace a zone from zone text (dry run returns the diff)',
        tags: ['zones'],
        params: ZoneParams,
        body: PutZoneBody,
        response: { 200: PutZoneResult, 201: PutZoneResult },
      },
      preValidation: zoneTextBody,
    },
    async (req, reply) => {
      const name = zoneNameFromPath((req.params as { zone: string }).zone)
      const body = req.body as {
        role: 'primary' | 'secondary'
        zone_text: string
        dry_run?: boolean
        expected_revision?: string
      }
      const expected = expectedRevision(ifMatch(req), body.expected_revision)
      const input = { role: body.role, zone_text: body.zone_text, dry_run: body.dry_run ?? false }
      const result = await service.put(name, input, expected, meta(req))
      if (!result.dryRun) etag(reply, result.state)
      reply.code(result.created && !result.dryRun ? 201 : 200)
      return {
        ...summary(result.state),
        dry_run: result.dryRun,
        created: result.created,
        changed: result.changed,
        warnings: result.warnings,
        ...(result.diff ? { diff: result.diff } : {}),
      }
    },
  )

  app.delete(
    '/v1/zones/:zone',
    { schema: { summary: 'Delete a zone', tags: ['zones'], params: ZoneParams, body: DeleteZoneBody } },
    async (req) => {
      const name = zoneNameFromPath((req.params as { zone: string }).zone)
      const body = (req.body ?? {}) as { expected_revision?: string }
      const expected = expectedRevision(ifMatch(req), body.expected_revision)
      const { warnings } = await service.remove(name, expected, meta(req))
      return { name: publicName(name), deleted: true, warnings }
    },
  )

  app.post(
    '/v1/zones/:zone/changes',
    {
      schema: {
        summary: 'Set or delete RRsets in a zone (dry run returns the diff)',
        tags: ['zones'],
        params: ZoneParams,
        body: ChangesBody,
        response: { 200: ChangesResult },
      },
    },
    async (req, reply) => {
      const name = zoneNameFromPath((req.params as { zone: string }).zone)
      const body = req.body as {
        dry_run?: boolean
        expected_revision?: string
        changes: Parameters<ZoneService['change']>[1]['changes']
      }
      const expected = expectedRevision(ifMatch(req), body.expected_revision)
      const m = meta(req)
      const result = await service.change(name, { changes: body.changes, dry_run: body.dry_run ?? false }, expected, m)
      reply.header('etag', `"${result.revision}"`)
      return {
        zone: publicName(name),
        dry_run: result.dryRun,
        changed: result.changed,
        revision: result.revision,
        previous_revision: result.before.revision,
        serial: result.serial,
        applied: body.changes.length,
        records: result.records,
        ...(result.diff ? { diff: result.diff } : {}),
      }
    },
  )

  app.get(
    '/v1/zones/:zone/history',
    {
      schema: {
        summary: "List a zone's revisions, newest first",
        tags: ['zones'],
        params: ZoneParams,
        querystring: PageQuery,
      },
    },
    async (req) => {
      const name = zoneNameFromPath((req.params as { zone: string }).zone)
      const page = pageOf(req.query as PageQueryType)
      const rows = await service.history(name, page)
      return {
        zone: publicName(name),
        history: rows.map(historyItem),
        next_before: nextBefore(rows, page),
      }
    },
  )

  app.get(
    '/v1/zones/:zone/history/:revision',
    { schema: { summary: 'Get a zone revision with its zone text', tags: ['zones'], params: HistoryParams } },
    async (req) => {
      const params = req.params as { zone: string; revision: string }
      const name = zoneNameFromPath(params.zone)
      const r = await service.historyEntry(name, params.revision)
      return { zone: publicName(name), ...historyItem(r), zone_text: r.zone_text }
    },
  )

  app.get(
    '/v1/zones/:zone/audit',
    {
      schema: {
        summary: "List a zone's audit events, newest first",
        tags: ['zones'],
        params: ZoneParams,
        querystring: PageQuery,
      },
    },
    async (req) => {
      const name = zoneNameFromPath((req.params as { zone: string }).zone)
      const page = pageOf(req.query as PageQueryType)
      const rows = await service.audit(name, page)
      return {
        zone: publicName(name),
        events: rows.map((r) => ({
          id: r.id,
          at: r.at,
          action: r.action,
          actor: r.actor,
          request_id: r.request_id,
          before_revision: r.before_revision,
          after_revision: r.after_revision,
          outcome: r.outcome,
          detail: JSON.parse(r.detail) as unknown,
        })),
        next_before: nextBefore(rows, page),
      }
    },
  )
}
