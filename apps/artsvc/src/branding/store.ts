/** SQL for branding themes and their content-addressed images. */
import { sql } from '@gatehouse/kit'
import type { Kysely, Transaction } from 'kysely'
import type { BrandingThemeRow, DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function listThemes(db: Db): Promise<BrandingThemeRow[]> {
  return db.selectFrom('branding_themes').selectAll().orderBy('name').execute()
}

export function getTheme(db: Db, name: string): Promise<BrandingThemeRow | undefined> {
  return db.selectFrom('branding_themes').selectAll().where('name', '=', name).executeTakeFirst()
}

export function getActiveTheme(db: Db): Promise<BrandingThemeRow | undefined> {
  return db.selectFrom('branding_themes').selectAll().where('active', '=', 1).executeTakeFirst()
}

/** PostgreSQL advisory lock key of the theme set ("artbrand"). */
const THEME_SET_LOCK_KEY = 0x6172746272616e64n

/**
 * Serialise the transactions that may add a theme, so two first saves cannot both see 49
 * themes and both insert: PostgreSQL's transaction-level advisory lock (READ COMMITTED would let
 * both counts pass); SQLite's write transaction already runs one at a time.
 */
export async function lockThemeSet(tx: Transaction<DB>, postgres: boolean) {
  if (postgres) await sql`select pg_advisory_xact_lock(${sql.lit(THEME_SET_LOCK_KEY.toString())}::bigint)`.execute(tx)
}

export async function countThemes(db: Db): Promise<number> {
  const r = await db
    .selectFrom('branding_themes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(r.n)
}

export async function putImage(db: Db, sha256: string, contentType: string, data: Buffer, now: number) {
  await db
    .insertInto('branding_images')
    .values({
      sha256,
      content_type: contentType,
      size: data.length,
      data_base64: data.toString('base64'),
      created_at: now,
    })
    .onConflict((oc) => oc.column('sha256').doNothing())
    .execute()
}

export function getImage(db: Db, sha256: string) {
  return db.selectFrom('branding_images').selectAll().where('sha256', '=', sha256).executeTakeFirst()
}

/** Save a theme, keeping its active flag when it exists. */
export async function upsertTheme(db: Db, row: BrandingThemeRow): Promise<void> {
  const { name: _n, active: _a, ...changes } = row
  await db
    .insertInto('branding_themes')
    .values(row)
    .onConflict((oc) => oc.column('name').doUpdateSet(changes))
    .execute()
}

/** Make `name` the one active theme; false when it does not exist. */
export async function activateTheme(db: Db, name: string): Promise<boolean> {
  const r = await db.updateTable('branding_themes').set({ active: 1 }).where('name', '=', name).executeTakeFirst()
  if (Number(r.numUpdatedRows) !== 1) return false
  await db.updateTable('branding_themes').set({ active: 0 }).where('name', '!=', name).where('active', '=', 1).execute()
  return true
}

export async function deleteTheme(db: Db, name: string): Promise<void> {
  await db.deleteFrom('branding_themes').where('name', '=', name).execute()
}

/** Images no theme refers to any more. */
export async function pruneImages(db: Db): Promise<void> {
  await db
    .deleteFrom('branding_images')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('branding_themes')
            .select('branding_themes.name')
            .where((eb) =>
              eb.or([
                eb('branding_themes.logo_sha256', '=', eb.ref('branding_images.sha256')),
                eb('branding_themes.favicon_sha256', '=', eb.ref('branding_images.sha256')),
              ]),
            ),
        ),
      ),
    )
    .execute()
}
