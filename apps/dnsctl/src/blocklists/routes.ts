/** GET/PUT /v1/blocklists/config. */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { expectedRevision, notModified } from '../revisions.ts'
import type { BlocklistService } from './service.ts'

const Domain = Type.String({ maxLength: 300 })

const PutBody = Type.Object(
  {
    sources: Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 1000 }),
    allow: Type.Array(Domain, { maxItems: 100_000 }),
    deny: Type.Array(Domain, { maxItems: 100_000 }),
    dry_run: Type.Optional(Type.Boolean()),
    expected_revision: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
)

export function blocklistRoutes(app: HttpApp, service: BlocklistService) {
  app.get(
    '/v1/blocklists/config',
    { schema: { summary: 'Get the blocklist configuration (sources, allow and deny lists)', tags: ['blocklists'] } },
    async (req, reply) => {
      const config = await service.read()
      reply.header('etag', `"${config.revision}"`)
      if (notModified(req.headers['if-none-match'], config.revision)) return reply.code(304).send()
      return config
    },
  )

  app.put(
    '/v1/blocklists/config',
    {
      schema: {
        summary: 'Replace the blocklist configuration (or validate it with dry_run)',
        tags: ['blocklists'],
        body: PutBody,
      },
    },
    async (req, reply) => {
      const body = req.body as {
        sources: string[]
        allow: string[]
        deny: string[]
        dry_run?: boolean
        expected_revision?: string
      }
      const header = typeof req.headers['if-match'] === 'string' ? req.headers['if-match'] : undefined
      const dryRun = body.dry_run ?? false
      const result = await service.put(body, expectedRevision(header, body.expected_revision), dryRun)
      if (!dryRun) reply.header('etag', `"${result.revision}"`)
      return {
        sources: result.sources,
        allow: result.allow,
        deny: result.deny,
        revision: result.revision,
        dry_run: dryRun,
        published: result.changed,
      }
    },
  )
}
