/**
 * What the content origin reads from the database and the blob store, through the caches of
 * `caches.ts`: a version's liveness, its manifest, a file's bytes. The full route awaits them;
 * the lean path only reads the caches they fill, and has the kit's HTTP lane await them
 * (`warm`) for a request it could not answer yet.
 */
import { buffer } from 'node:stream/consumers'
import { sql } from 'kysely'
import type { AppContext } from '../context.ts'
import type { VersionFileRow } from '../db/schema.ts'
import { shareLiveUntil } from '../shares/store.ts'
import type { ByteRange } from '../storage/blob-store.ts'
import { SMALL_BLOB } from './caches.ts'

export interface ContentLoaders {
  /**
   * Whether a version (through a share, if any) may be served now: cached for at most a second
   * (see caches.ts), or checked in the database; `force` checks even when cached.
   */
  live(versionId: string, shareId: string | undefined, now: number, force?: boolean): Promise<boolean>
  /** A version's files by path (cached). */
  manifest(versionId: string): Promise<Map<string, VersionFileRow>>
  /** A file's bytes: cached up to SMALL_BLOB, a stream above. */
  body(sha256: string, size: number): Promise<Buffer | NodeJS.ReadableStream>
  /** Bytes `start` to `end` of a file: from the cache when it holds the file, else read from the store. */
  range(sha256: string, range: ByteRange): Promise<Buffer | NodeJS.ReadableStream>
}

export function contentLoaders(ctx: AppContext): ContentLoaders {
  const caches = ctx.caches
  return {
    async live(versionId, shareId, now, force = false) {
      const key = `${versionId}/${shareId ?? ''}`
      if (!force && caches.isLive(key, now)) return true
      const generation = caches.generation()
      const row = await ctx.database.db
        .selectFrom('versions')
        .innerJoin('artifacts', 'artifacts.id', 'versions.artifact_id')
        .select(sql<number>`1`.as('ok'))
        .where('versions.id', '=', versionId)
        .where('artifacts.deleted_at', 'is', null)
        .executeTakeFirst()
      if (row === undefined) return false
      const until = shareId ? await shareLiveUntil(ctx.database.db, shareId, now) : Number.POSITIVE_INFINITY
      if (until === undefined) return false
      caches.markLive(key, now, generation, until)
      return true
    },

    async manifest(versionId) {
      let m = caches.manifests.get(versionId)
      if (!m) {
        const rows = await ctx.database.db
          .selectFrom('version_files')
          .selectAll()
          .where('version_id', '=', versionId)
          .execute()
        m = new Map(rows.map((r) => [r.path, r]))
        caches.manifests.set(versionId, m)
      }
      return m
    },

    async body(sha256, size) {
      const cached = caches.blobs.get(sha256)
      if (cached) return cached
      const stream = await ctx.store.read(sha256)
      if (size > SMALL_BLOB) return stream
      const bytes = await buffer(stream)
      caches.blobs.set(sha256, bytes)
      return bytes
    },

    async range(sha256, range) {
      const cached = caches.blobs.get(sha256)
      if (cached) return cached.subarray(range.start, range.end + 1)
      return ctx.store.read(sha256, range)
    },
  }
}
