/**
 * Publisher-to-viewer grants (ARTSVC_PUBLISHER_VIEWERS, spec "Authentication" rule 10): a
 * strict JSON object mapping publisher subjects to the subjects that get a viewer grant on
 * everything the publisher publishes.
 *
 * - Every recipient must be a user (signed in once): an unknown one stops startup.
 * - The grant is written in the publication's own transaction (REST, CLI, MCP, new
 *   versions alike: they all commit through uploads/publish.ts); a recipient missing at
 *   that moment rolls the publication back.
 * - Startup backfills every active artifact the publisher has published a version of.
 * - Grants are only ever added (`ON CONFLICT DO NOTHING`): ownership, visibility and
 *   existing grants (editor grants included) stay as they are, and removing a mapping
 *   revokes nothing.
 */
import { StartupError } from '@gatehouse/kit'
import type { Kysely, Transaction } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { DB, UserRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { type PublisherViewers, parsePublisherViewers } from './publisher-viewers-setting.ts'

type Db = Kysely<DB> | Transaction<DB>

export type { PublisherViewers }
export { parsePublisherViewers }

async function recipientUsers(db: Db, subjects: string[]): Promise<Map<string, UserRow>> {
  if (subjects.length === 0) return new Map()
  const rows = await db.selectFrom('users').selectAll().where('oidc_subject', 'in', subjects).execute()
  return new Map(rows.map((u) => [u.oidc_subject, u]))
}

/** Add missing viewer grants; returns how many were created. Audited per grant. */
async function addViewerGrants(
  tx: Db,
  artifact: { id: string; owner_id: string },
  recipients: UserRow[],
  by: string,
  now: number,
): Promise<number> {
  let added = 0
  for (const user of recipients) {
    if (user.id === artifact.owner_id) continue
    const r = await tx
      .insertInto('grants')
      .values({ artifact_id: artifact.id, user_id: user.id, role: 'viewer', created_by: by, created_at: now })
      .onConflict((oc) => oc.columns(['artifact_id', 'user_id']).doNothing())
      .executeTakeFirst()
    if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) continue
    added++
    await recordAudit(
      tx,
      undefined,
      {
        action: 'grant.put',
        targetType: 'artifact',
        targetId: artifact.id,
        details: { user: user.id, role: 'viewer', source: 'ARTSVC_PUBLISHER_VIEWERS', publisher: by },
      },
      now,
    )
  }
  return added
}

/** Inside the publication transaction: the publisher's recipients get viewer grants, or the commit rolls back. */
export async function grantPublisherViewers(
  tx: Transaction<DB>,
  map: PublisherViewers,
  publisher: UserRow,
  artifact: { id: string; owner_id: string },
  now: number,
): Promise<void> {
  const subjects = map[publisher.oidc_subject]
  if (!subjects || subjects.length === 0) return
  const users = await recipientUsers(tx, subjects)
  const missing = subjects.find((s) => !users.has(s))
  if (missing !== undefined) throw errors.viewer_recipient_missing(missing)
  await addViewerGrants(tx, artifact, [...users.values()], publisher.id, now)
}

/**
 * At startup: refuse unknown recipients (one line naming each), then backfill every active
 * artifact the mapped publishers have published a version of. Idempotent.
 */
export async function applyPublisherViewers(db: Kysely<DB>, map: PublisherViewers, now: number): Promise<number> {
  const all = [...new Set(Object.values(map).flat())]
  const users = await recipientUsers(db, all)
  const unknown = all.filter((s) => !users.has(s))
  if (unknown.length > 0)
    throw new StartupError(
      unknown.map(
        (s) => `ARTSVC_PUBLISHER_VIEWERS: recipient ${JSON.stringify(s)} is not a user (they must sign in once)`,
      ),
    )
  let added = 0
  for (const [publisherSubject, subjects] of Object.entries(map)) {
    const publisher = await db
      .selectFrom('users')
      .select('id')
      .where('oidc_subject', '=', publisherSubject)
      .executeTakeFirst()
    if (!publisher) continue
    const artifacts = await db
      .selectFrom('artifacts')
      .select(['artifacts.id', 'artifacts.owner_id'])
      .where('artifacts.deleted_at', 'is', null)
      .where((eb) =>
        eb.or([
          eb('artifacts.owner_id', '=', publisher.id),
          eb.exists(
            eb
              .selectFrom('versions')
              .select('versions.id')
              .whereRef('versions.artifact_id', '=', 'artifacts.id')
              .where('versions.created_by', '=', publisher.id),
          ),
        ]),
      )
      .execute()
    const recipients = subjects.map((s) => users.get(s)!)
    for (const artifact of artifacts) {
      added += await db.transaction().execute((tx) => addViewerGrants(tx, artifact, recipients, publisher.id, now))
    }
  }
  return added
}
