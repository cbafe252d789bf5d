/** The cast most action and panel tests need: a channel with a viewer, an operator and a channel admin. */
import { channel, member, type Notify, reader } from './helpers.ts'

export interface Cast {
  /** The channel's publishing token. */
  token: string
  viewer: string
  operator: string
  chAdmin: string
}

/** Create `ch` and the readers vera (viewer), otto (operator), carla (channel_admin); returns their cookies. */
export async function castOf(n: Notify, admin: string, ch = 'ops'): Promise<Cast> {
  const { token } = await channel(n, admin, ch)
  const viewer = await reader(n, admin, 'vera')
  const operator = await reader(n, admin, 'otto')
  const chAdmin = await reader(n, admin, 'carla')
  await member(n, admin, ch, 'vera', 'viewer')
  await member(n, admin, ch, 'otto', 'operator')
  await member(n, admin, ch, 'carla', 'channel_admin')
  return { token, viewer, operator, chAdmin }
}
