/**
 * The state of a browser sign-in in flight (authorization code flow with PKCE): stored by its
 * hash when the browser is sent to the provider, taken exactly once when it comes back.
 */
import type { Insertable, Kysely, Selectable } from 'kysely'
import type { DB, OidcStateTable } from '../db/schema.ts'

export function saveLoginState(db: Kysely<DB>, state: Insertable<OidcStateTable>): Promise<unknown> {
  return db.insertInto('oidc_states').values(state).execute()
}

/**
 * The state stored under `stateHash`, deleted as it is read; undefined when there is none or a
 * concurrent callback took it first (whoever deletes the row owns the state).
 */
export async function takeLoginState(
  db: Kysely<DB>,
  stateHash: string,
): Promise<Selectable<OidcStateTable> | undefined> {
  const row = await db.selectFrom('oidc_states').selectAll().where('state_hash', '=', stateHash).executeTakeFirst()
  if (!row) return undefined
  const deleted = await db.deleteFrom('oidc_states').where('state_hash', '=', stateHash).executeTakeFirst()
  return Number(deleted.numDeletedRows) === 1 ? row : undefined
}
