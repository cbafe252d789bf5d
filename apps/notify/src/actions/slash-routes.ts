/**
 * Slash commands (design in slash.ts and README "Slash commands").
 *   POST /api/v1/admin/import/slash-commands   administrator; strict {dry_run, commands:[{trigger, url, token, method?, description?, allow_private?}]}
 *   GET  /api/v1/slash-commands                any reader: {commands:[{trigger, description}]}
 *   POST /api/v1/channels/{id}/commands        operator, channel_admin, administrator of the channel;
 *                                              {trigger, text?}; header Idempotency-Key (required)
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { readerOf } from '../auth/guard.ts'
import { canOperate, visibleChannel } from '../channels/access.ts'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { ChannelName } from '../names.ts'
import { checkIdempotencyKey, type InvokeDeps, invocationResponse, invokeOnce } from './invoke.ts'
import { callSlashCommand, importSlashCommands, MAX_IMPORT, slashTargetName, TRIGGER } from './slash.ts'
import { findTarget } from './targets.ts'

const Definition = Type.Object(
  {
    trigger: Type.String({ pattern: TRIGGER.source }),
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    token: Type.String({ minLength: 1, maxLength: 256 }),
    method: Type.Optional(Type.Union([Type.Literal('P'), Type.Literal('POST')])),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    allow_private: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
const Import = Type.Object(
  { dry_run: Type.Boolean(), commands: Type.Array(Definition, { maxItems: MAX_IMPORT }) },
  { additionalProperties: false },
)
const Invoke = Type.Object(
  {
    trigger: Type.String({ pattern: TRIGGER.source }),
    text: Type.Optional(Type.String({ maxLength: 4000, pattern: '^[^\\u0000]*$' })),
  },
  { additionalProperties: false },
)

export function slashRoutes(app: HttpApp, ctx: Context, deps: InvokeDeps) {
  const db = ctx.database.db

  app.post(
    '/api/v1/admin/import/slash-commands',
    {
      onRequest: ctx.guard.admin,
      schema: { summary: 'Import slash commands (administrator; dry run or commit)', tags: ['actions'], body: Import },
    },
    async (req) => importSlashCommands(db, deps.keys, readerOf(req), req.body.dry_run, req.body.commands),
  )

  app.get(
    '/api/v1/slash-commands',
    { onRequest: ctx.guard.signedIn, schema: { summary: 'List the slash commands', tags: ['actions'] } },
    async () => {
      const rows = await db
        .selectFrom('action_targets')
        .select(['slash_trigger', 'description'])
        .where('kind', '=', 'slash')
        .orderBy('slash_trigger')
        .execute()
      return { commands: rows.map((r) => ({ trigger: r.slash_trigger, description: r.description })) }
    },
  )

  app.post(
    '/api/v1/channels/:id/commands',
    {
      onRequest: ctx.guard.signedIn,
      schema: {
        summary: 'Run a slash command in a channel (Idempotency-Key required)',
        tags: ['actions'],
        params: Type.Object({ id: ChannelName }),
        body: Invoke,
      },
    },
    async (req) => {
      const reader = readerOf(req)
      const key = checkIdempotencyKey(req.headers['idempotency-key'])
      const { channel, role } = await visibleChannel(db, reader, req.params.id)
      if (!canOperate(reader, role)) throw errors.role_required('running a slash command')
      const name = slashTargetName(req.body.trigger)
      if ((await findTarget(db, name))?.kind !== 'slash') throw errors.action_target_not_found(`/${req.body.trigger}`)
      const scope = { notification_id: null, action_index: null, channel: channel.name, target: name }
      const { invocation, replayed } = await invokeOnce(deps, reader, key, scope, async () => {
        const target = await findTarget(db, name)
        if (target?.kind !== 'slash') {
          return { outcome: 'failure', statusCode: null, error: `slash command /${req.body.trigger} was removed` }
        }
        const limits = { ...deps.limits, userAgent: deps.userAgent }
        return callSlashCommand(deps.keys, limits, target, reader, channel.name, req.body.text ?? '', key)
      })
      return { invocation: invocationResponse(invocation), replayed }
    },
  )
}
