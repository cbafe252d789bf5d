/**
 * Action targets and card action invocation (spec Part B, Endpoints).
 *   PUT    /api/v1/action-targets/{name}                 administrator: register or replace (201 / 200)
 *   GET    /api/v1/action-targets                        administrator: list (never credentials)
 *   DELETE /api/v1/action-targets/{name}                 administrator: revoke cluster-wide (204)
 *   POST   /api/v1/notifications/{id}/actions/{index}    operator, channel_admin, administrator;
 *                                                        header Idempotency-Key (required)
 *   GET    /api/v1/notifications/{id}/actions            readers of the channel: its invocations
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { readerOf } from '../auth/guard.ts'
import { canOperate } from '../channels/access.ts'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { visibleNotification } from '../inbox/lifecycle.ts'
import { open } from '../settings/action-key.ts'
import { contextAad } from './card-context.ts'
import { checkIdempotencyKey, type InvokeDeps, invocationResponse, invokeOnce, sendCallback } from './invoke.ts'
import {
  deleteTarget,
  findTarget,
  listTargets,
  saveTarget,
  TARGET_NAME,
  targetCredential,
  targetResponse,
} from './targets.ts'

const NameParams = Type.Object({ name: Type.String({ pattern: TARGET_NAME.source }) })
const SaveTarget = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    allow_private: Type.Optional(Type.Boolean()),
    credential: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()])),
    description: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
)
const ActionParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  index: Type.Integer({ minimum: 0, maximum: 7 }),
})
const IdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) })

interface StoredAction {
  type: string
  label: string
  target?: string
}

export function actionRoutes(app: HttpApp, ctx: Context, deps: InvokeDeps) {
  const db = ctx.database.db

  app.put(
    '/api/v1/action-targets/:name',
    {
      onRequest: ctx.guard.admin,
      schema: {
        summary: 'Register or replace an action target (administrator)',
        tags: ['actions'],
        params: NameParams,
        body: SaveTarget,
      },
    },
    async (req, reply) => {
      const { target, created } = await saveTarget(db, deps.keys, readerOf(req), req.params.name, req.body)
      return reply.code(created ? 201 : 200).send({ target: targetResponse(target) })
    },
  )

  app.get(
    '/api/v1/action-targets',
    { onRequest: ctx.guard.admin, schema: { summary: 'List action targets (administrator)', tags: ['actions'] } },
    async () => {
      return { targets: (await listTargets(db)).map(targetResponse) }
    },
  )

  app.delete(
    '/api/v1/action-targets/:name',
    {
      onRequest: ctx.guard.admin,
      schema: { summary: 'Revoke an action target (administrator)', tags: ['actions'], params: NameParams },
    },
    async (req, reply) => {
      await deleteTarget(db, readerOf(req), req.params.name)
      return reply.code(204).send()
    },
  )

  app.post(
    '/api/v1/notifications/:id/actions/:index',
    {
      onRequest: ctx.guard.signedIn,
      schema: { summary: 'Invoke a card action (Idempotency-Key required)', tags: ['actions'], params: ActionParams },
    },
    async (req) => {
      const reader = readerOf(req)
      const key = checkIdempotencyKey(req.headers['idempotency-key'])
      const { id, index } = req.params
      const { notification, role } = await visibleNotification(db, reader, id)
      if (!canOperate(reader, role)) throw errors.role_required('invoking an action')
      const actions = notification.kind === 'card' ? (JSON.parse(notification.content).actions as StoredAction[]) : []
      const action = actions?.[index]
      if (action?.type !== 'registered' || !action.target) throw errors.action_not_found(index)
      const targetName = action.target
      const scope = { notification_id: id, action_index: index, channel: notification.channel, target: targetName }
      const { invocation, replayed } = await invokeOnce(deps, reader, key, scope, async () => {
        const target = await findTarget(db, targetName)
        if (target?.kind !== 'target') {
          return { outcome: 'failure', statusCode: null, error: `action target ${targetName} was revoked` }
        }
        const credential = await targetCredential(deps.keys, target)
        const sealedContext = await db
          .selectFrom('action_contexts')
          .select('ciphertext')
          .where('notification_id', '=', id)
          .where('action_index', '=', index)
          .executeTakeFirst()
        const context = sealedContext
          ? JSON.parse(open(await deps.keys.forRead(), sealedContext.ciphertext, contextAad(id, index)))
          : undefined
        return sendCallback(
          {
            url: target.url,
            allowPrivate: target.allow_private === 1,
            idempotencyKey: key,
            contentType: 'application/json',
            headers: {
              'user-agent': deps.userAgent,
              ...(credential ? { authorization: `Bearer ${credential}` } : {}),
            },
            body: JSON.stringify({
              idempotency_key: key,
              notification: {
                id,
                channel: notification.channel,
                title: notification.title,
                severity: notification.severity,
                state: notification.state,
              },
              action: { index, label: action.label, target: targetName },
              reader: { username: reader.username },
              ...(context !== undefined ? { context } : {}),
            }),
          },
          deps.limits,
        )
      })
      return { invocation: invocationResponse(invocation), replayed }
    },
  )

  app.get(
    '/api/v1/notifications/:id/actions',
    {
      onRequest: ctx.guard.signedIn,
      schema: { summary: "List a notification's action invocations", tags: ['actions'], params: IdParams },
    },
    async (req) => {
      await visibleNotification(db, readerOf(req), req.params.id)
      const rows = await db
        .selectFrom('action_invocations')
        .selectAll()
        .where('notification_id', '=', req.params.id)
        .orderBy('id')
        .limit(200)
        .execute()
      return { invocations: rows.map(invocationResponse) }
    },
  )
}
