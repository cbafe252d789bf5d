import type { Kysely } from 'kysely'

// Branding themes (at most 50, one active) and their images. Images are kept as base64
// text (at most 512 KiB each before encoding): one portable column type for SQLite and
// PostgreSQL, and they are few and small. Images are content-addressed and shared.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('branding_images')
    .addColumn('sha256', 'text', (c) => c.primaryKey())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('data_base64', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('branding_themes')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('site_name', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('palette', 'text', (c) => c.notNull())
    .addColumn('logo_sha256', 'text', (c) => c.references('branding_images.sha256'))
    .addColumn('favicon_sha256', 'text', (c) => c.references('branding_images.sha256'))
    .addColumn('active', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_by', 'text', (c) => c.notNull())
    .execute()
}
