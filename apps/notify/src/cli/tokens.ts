/**
 * `notify token create --database URL --user NAME --name LABEL` for operators and scripts, as a
 * plain function over parsed options (the app shell wires it into the notify program): it
 * writes to the database directly, like the other admin CLIs, and prints the secret once.
 */
import { openNotifyDatabase } from '../db/open.ts'
import { createReaderToken } from '../tokens/store.ts'
import { findUserByName } from '../users/store.ts'

export interface TokenCreateOptions {
  database: string
  user: string
  name: string
}

export class TokenCommandError extends Error {
  override readonly name = 'TokenCommandError'
}

export async function tokenCreate(options: TokenCreateOptions): Promise<{ id: string; secret: string }> {
  const database = await openNotifyDatabase(options.database)
  try {
    const user = await findUserByName(database.db, options.user)
    if (!user) throw new TokenCommandError(`no user ${JSON.stringify(options.user)}`)
    if (user.enabled !== 1) throw new TokenCommandError(`user ${JSON.stringify(options.user)} is disabled`)
    const { row, secret } = await createReaderToken(database.db, user.id, options.name)
    return { id: row.id, secret }
  } finally {
    await database.close()
  }
}
