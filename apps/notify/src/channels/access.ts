/**
 * Channel access rules (spec Part B, Authentication 5): private channels exist only for
 * administrators and explicit members; acknowledging and resolving need operator or
 * channel_admin; channel_admin also manages the channel's membership.
 */
import type { Kysely, Transaction } from 'kysely'
import type { Reader } from '../auth/guard.ts'
import type { ChannelRole, ChannelRow, DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { findChannel, roleOf } from './store.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface ChannelAccess {
  channel: ChannelRow
  role: ChannelRole | undefined
}

/** The channel if the reader may see it; 404 otherwise (a hidden channel looks like a missing one). */
export async function visibleChannel(db: Db, reader: Reader, name: string): Promise<ChannelAccess> {
  const channel = await findChannel(db, name)
  if (!channel) throw errors.channel_not_found(name)
  const role = await roleOf(db, name, reader.id)
  if (channel.visibility === 'private' && !reader.isAdmin && role === undefined) throw errors.channel_not_found(name)
  return { channel, role }
}

export function canOperate(reader: Reader, role: ChannelRole | undefined): boolean {
  return reader.isAdmin || role === 'operator' || role === 'channel_admin'
}

export function canManageMembers(reader: Reader, role: ChannelRole | undefined): boolean {
  return reader.isAdmin || role === 'channel_admin'
}

/**
 * Names of the channels a non-administrator may read, or undefined for "all channels"
 * (administrators). Used to scope inbox queries.
 */
export async function readableChannelNames(db: Db, reader: Reader): Promise<string[] | undefined> {
  if (reader.isAdmin) return undefined
  const rows = await db
    .selectFrom('channels')
    .select('name')
    .where((eb) =>
      eb.or([
        eb('visibility', '=', 'public'),
        eb(
          'name',
          'in',
          eb.selectFrom('channel_members').select('channel_members.channel').where('user_id', '=', reader.id),
        ),
      ]),
    )
    .execute()
  return rows.map((r) => r.name)
}
