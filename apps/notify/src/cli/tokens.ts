/**
 * `notify token create|list|revoke`: reader API tokens for scripts, managed by an operator on
 * the database `serve` uses (like the other admin CLIs). A secret is printed once and stored
 * only as its hash.
 */
import { type ExpiryOptions, expiryOf } from '@gatehouse/kit/cli/expiry.ts'
import { printList } from '@gatehouse/kit/cli/output.ts'
import { CliError, invokedAs } from '@gatehouse/kit/cli/program.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import type { Kysely } from 'kysely'
import { openNotifyDatabase } from '../db/open.ts'
import type { DB } from '../db/schema.ts'
import { listReaderTokensWithOwner, readerTokenResponse, revokeReaderToken } from '../tokens/store.ts'
import { findUserByName } from '../users/store.ts'
import { cliActor } from './admin-actor.ts'
import { readDatabase, withDatabase } from './database.ts'

type Opts = Record<string, unknown>
const out = (text: string) => void process.stdout.write(text)

export interface TokenCreateOptions {
  database: string
  user: string
  name: string
}

/** A refusal worded for the operator (unknown or disabled user): exit 1 through the shell. */
export class TokenCommandError extends CliError {}

/** Create a token for an existing, enabled user on the database at `options.database`. */
export async function tokenCreate(options: TokenCreateOptions): Promise<{ id: string; secret: string }> {
  const database = await openNotifyDatabase(options.database, 2, { create: false })
  try {
    return await createFor(database.db, options.user, options.name)
  } finally {
    await database.close()
  }
}

async function createFor(db: Kysely<DB>, username: string, name: string, expiresAt: string | null = null) {
  const user = await findUserByName(db, username)
  if (!user) throw new TokenCommandError(`no user ${JSON.stringify(username)}`)
  if (user.enabled !== 1) throw new TokenCommandError(`user ${JSON.stringify(username)} is disabled`)
  // Only issuing needs node:crypto: list and revoke start without it.
  const { issueReaderToken } = await import('../tokens/credentials.ts')
  const { row, secret } = await issueReaderToken(db, cliActor(), user, name, expiresAt)
  return { id: row.id, secret, expiresAt }
}

export async function tokenCreateCommand(o: Opts): Promise<void> {
  const user = o.user as string
  const name = o.name as string
  if (name.trim() === '' || name.length > 100) throw new CliError('--name must be 1 to 100 characters')
  const expires = expiryOf(o as ExpiryOptions) ?? null
  const { id, secret, expiresAt } = await withDatabase(o, (d) => createFor(d.db, user, name, expires))
  if (o.json === true) out(`${terminalJson({ id, user, name, expires_at: expiresAt, secret }, 2)}\n`)
  else {
    const until = expiresAt === null ? '' : ` (until ${expiresAt})`
    out(`token ${id} created for ${escapeTerminal(user)}${until}: ${secret}\n`)
    out('Store it now: it is shown only once. Use it as "Authorization: Bearer <token>".\n')
  }
}

export async function tokenListCommand(o: Opts): Promise<void> {
  const user = typeof o.user === 'string' ? o.user : undefined
  const rows = await readDatabase(o, async (d) => {
    // A mistyped name is a mistake to name, not an empty list (as push list).
    if (user !== undefined && !(await findUserByName(d.db, user))) throw new CliError(`no user ${JSON.stringify(user)}`)
    return listReaderTokensWithOwner(d.db, user)
  })
  const now = new Date().toISOString()
  printList(
    rows,
    [
      { header: 'ID', value: (r) => r.id },
      { header: 'USER', value: (r) => r.username },
      { header: 'NAME', value: (r) => r.name },
      { header: 'CREATED', value: (r) => r.created_at },
      { header: 'LAST USED', value: (r) => r.last_used_at ?? 'never' },
      {
        header: 'EXPIRES',
        value: (r) =>
          r.expires_at === null ? 'never' : r.expires_at <= now ? `${r.expires_at} (expired)` : r.expires_at,
      },
    ],
    {
      json: o.json === true,
      toJson: (r) => ({ ...readerTokenResponse(r), user: r.username }),
      empty: `no tokens${user === undefined ? '' : ` for ${user}`} yet: ${invokedAs('notify')} token create --user ${user ?? 'USER'} --name NAME`,
    },
  )
}

export async function tokenRevokeCommand(o: Opts, id: string): Promise<void> {
  const removed = await withDatabase(o, (d) => revokeReaderToken(d.db, d.kind, cliActor(), id))
  if (!removed) throw new CliError(`no reader token ${JSON.stringify(id)} (see notify token list)`)
  out(`token ${escapeTerminal(id)} revoked: it no longer works\n`)
}
