/**
 * Creating a channel, shared by POST /api/v1/channels and `notify channel create`: the field
 * rules (the routes' wire schemas are built from the same limits), the channel with its
 * channel-scoped publishing hook, the audit entry and the realtime change, in one transaction.
 */
import { isUniqueViolation } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { Reader } from '../auth/guard.ts'
import type { ChannelRow, DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { CHANNEL_NAME } from '../name-patterns.ts'
import { appendChange } from '../realtime/changes.ts'
import { type IssuedWebhook, issueWebhook } from '../webhooks/service.ts'
import { channelResponse, insertChannel } from './store.ts'

export const DISPLAY_NAME_MAX = 100
export const DESCRIPTION_MAX = 1000
export const ACCENT_COLOR = /^#[0-9a-fA-F]{6}$/
export const DEFAULT_ACCENT_COLOR = '#4f6bed'

export interface NewChannel {
  name: string
  display_name?: string | undefined
  description?: string | undefined
  accent_color?: string | undefined
  visibility?: 'public' | 'private' | undefined
}

// JSON Schema string lengths count code points, not UTF-16 units; so do these checks.
const length = (s: string) => [...s].length

/**
 * The first rule `input` breaks, as the field and why, for callers without the wire schema
 * (the command line); undefined when it is a valid new channel.
 */
export function newChannelProblem(input: NewChannel): { field: keyof NewChannel; why: string } | undefined {
  if (!CHANNEL_NAME.test(input.name))
    return {
      field: 'name',
      why: '1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit',
    }
  if (
    input.display_name !== undefined &&
    (length(input.display_name) < 1 || length(input.display_name) > DISPLAY_NAME_MAX)
  )
    return { field: 'display_name', why: `1 to ${DISPLAY_NAME_MAX} characters` }
  if (input.description !== undefined && length(input.description) > DESCRIPTION_MAX)
    return { field: 'description', why: `at most ${DESCRIPTION_MAX} characters` }
  if (input.accent_color !== undefined && !ACCENT_COLOR.test(input.accent_color))
    return { field: 'accent_color', why: `a colour as #rrggbb, e.g. ${DEFAULT_ACCENT_COLOR}` }
  return undefined
}

/**
 * Create a channel and its locked publishing hook (whose token is returned once); an
 * existing name is channel_exists and leaves nothing behind.
 */
export async function createChannel(
  db: Kysely<DB>,
  kind: 'sqlite' | 'postgres',
  actor: Pick<Reader, 'id' | 'username'>,
  input: NewChannel,
): Promise<{ channel: ChannelRow; hook: IssuedWebhook }> {
  const row: ChannelRow = {
    name: input.name,
    display_name: input.display_name ?? input.name,
    description: input.description ?? '',
    accent_color: (input.accent_color ?? DEFAULT_ACCENT_COLOR).toLowerCase(),
    visibility: input.visibility ?? 'public',
    created_at: new Date().toISOString(),
  }
  const hook = await db
    .transaction()
    .execute(async (tx) => {
      await insertChannel(tx, row)
      const hook = await issueWebhook(tx, row.name, true, 'channel')
      await recordAudit(tx, actor, 'channel.create', row.name, { visibility: row.visibility })
      await appendChange(tx, kind, {
        kind: 'channel',
        channel: row.name,
        data: { change: 'created', channel: channelResponse(row) },
      })
      return hook
    })
    .catch((err) => {
      if (isUniqueViolation(err)) throw errors.channel_exists(input.name)
      throw err
    })
  return { channel: row, hook }
}
