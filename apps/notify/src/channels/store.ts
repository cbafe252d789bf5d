import type { Kysely, Transaction } from 'kysely'
import type { ChannelRole, ChannelRow, DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function findChannel(db: Db, name: string): Promise<ChannelRow | undefined> {
  return db.selectFrom('channels').selectAll().where('name', '=', name).executeTakeFirst()
}

export async function insertChannel(db: Db, row: ChannelRow): Promise<void> {
  await db.insertInto('channels').values(row).execute()
}

/** Every channel, by name (an administrator's view: private ones too). */
export function listChannels(db: Db): Promise<ChannelRow[]> {
  return db.selectFrom('channels').selectAll().orderBy('name').execute()
}

/** A channel as the API and `notify channel list --json` show it; `role`: the reader's, when asked. */
export function channelResponse(c: ChannelRow, role?: ChannelRole | null) {
  return {
    id: c.name,
    name: c.name,
    display_name: c.display_name,
    description: c.description,
    accent_color: c.accent_color,
    visibility: c.visibility,
    created_at: c.created_at,
    ...(role === undefined ? {} : { role }),
  }
}

/** Channels the reader may see: all for administrators, else public ones and those they belong to. */
export function listVisibleChannels(
  db: Db,
  reader: { id: string; isAdmin: boolean },
): Promise<Array<ChannelRow & { role: ChannelRole | null }>> {
  let q = db
    .selectFrom('channels')
    .leftJoin('channel_members', (j) =>
      j.onRef('channel_members.channel', '=', 'channels.name').on('channel_members.user_id', '=', reader.id),
    )
    .selectAll('channels')
    .select('channel_members.role')
    .orderBy('channels.name')
  if (!reader.isAdmin) {
    q = q.where((eb) => eb.or([eb('channels.visibility', '=', 'public'), eb('channel_members.role', 'is not', null)]))
  }
  return q.execute()
}

export async function roleOf(db: Db, channel: string, userId: string): Promise<ChannelRole | undefined> {
  const row = await db
    .selectFrom('channel_members')
    .select('role')
    .where('channel', '=', channel)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return row?.role
}

export async function upsertMember(db: Db, channel: string, userId: string, role: ChannelRole): Promise<boolean> {
  const now = new Date().toISOString()
  const existing = await roleOf(db, channel, userId)
  if (existing === undefined) {
    await db.insertInto('channel_members').values({ channel, user_id: userId, role, created_at: now }).execute()
    return true
  }
  await db
    .updateTable('channel_members')
    .set({ role })
    .where('channel', '=', channel)
    .where('user_id', '=', userId)
    .execute()
  return false
}

export async function deleteMember(db: Db, channel: string, userId: string): Promise<boolean> {
  const r = await db
    .deleteFrom('channel_members')
    .where('channel', '=', channel)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

export function listMembers(db: Db, channel: string) {
  return db
    .selectFrom('channel_members')
    .innerJoin('users', 'users.id', 'channel_members.user_id')
    .select(['users.username', 'channel_members.role', 'channel_members.created_at'])
    .where('channel_members.channel', '=', channel)
    .orderBy('users.username')
    .execute()
}
