/**
 * Commit: validate the staged ZIP, store its files, then publish the version in one
 * database transaction. Blobs are content-addressed and written before the transaction,
 * so a crash at any point leaves either no version (orphaned blobs are harmless and the
 * upload can be committed again) or a complete one; never half a version. A transaction that
 * fails (the database unavailable, a concurrent commit) removes the manifest it wrote.
 */
import { randomBytes } from 'node:crypto'
import { rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { isUniqueViolation, mkdirPrivate } from '@gatehouse/kit'
import { requirePublisher } from '../artifacts/access.ts'
import {
  bumpLatestVersion,
  getActiveArtifact,
  insertArtifact,
  insertVersion,
  insertVersionFiles,
} from '../artifacts/store.ts'
import { recordAudit } from '../audit/store.ts'
import type { Principal } from '../auth/principal.ts'
import { BundleError, extractBundle } from '../bundles/zip.ts'
import type { AppContext } from '../context.ts'
import type { UploadRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { grantPublisherViewers } from '../grants/publisher-viewers.ts'
import { iso, newId } from '../ids.ts'
import { stagingPath } from './service.ts'
import { getUpload, markCommitted } from './store.ts'

class AlreadyCommitted extends Error {}

export async function commitUpload(ctx: AppContext, principal: Principal, upload: UploadRow) {
  if (upload.user_id !== principal.user.id) throw errors.access_denied('commit an upload started by another account')
  if (upload.state !== 'received' || !upload.zip_sha256)
    throw upload.state === 'receiving' ? errors.upload_in_progress() : errors.upload_not_received()
  const staged = stagingPath(ctx, upload.id, upload.zip_sha256)
  // Only overlapping PUTs of the same bytes can remove a current bundle (see receiveBundle):
  // the client uploads again.
  if (!(await stat(staged).catch(() => undefined))) throw errors.upload_not_received()
  if (upload.artifact_id) await requirePublisher(ctx, principal, upload.artifact_id)

  const work = join(ctx.tmpDir, `commit-${upload.id}-${randomBytes(4).toString('hex')}`)
  await mkdirPrivate(work)
  try {
    let bundle: Awaited<ReturnType<typeof extractBundle>>
    try {
      bundle = await extractBundle(
        staged,
        upload.entrypoint,
        { maxBytes: ctx.config.maxBundleBytes, maxFiles: ctx.config.maxFiles },
        work,
      )
    } catch (err) {
      if (err instanceof BundleError) ctx.counters.bundleRejections.inc({ reason: err.reason })
      if (err instanceof BundleError)
        throw errors.bundle_invalid.with({ details: { reason: err.reason }, cause: err }, err.message)
      throw err
    }
    const versionId = newId()
    const files = bundle.files.map((f) => ({
      path: f.path,
      size: f.size,
      sha256: f.sha256,
      content_type: f.contentType,
    }))
    try {
      // Several at a time: each waits on an fsync or an S3 round trip.
      const queue = [...bundle.files]
      const worker = async () => {
        for (let f = queue.shift(); f; f = queue.shift()) await ctx.store.putFile(f.sha256, f.tempPath, f.size)
      }
      await Promise.all(Array.from({ length: 16 }, worker))
      await ctx.store.putManifest(
        versionId,
        JSON.stringify({ version: versionId, upload: upload.id, entrypoint: upload.entrypoint, files }),
      )
      await ctx.store.flush()
    } catch (err) {
      throw errors.storage_unavailable.with({ cause: err })
    }
    const now = ctx.clock.now()
    const artifactId = upload.artifact_id ?? newId()
    let number = 1
    try {
      await ctx.database.db.transaction().execute(async (tx) => {
        if (upload.artifact_id) {
          const bumped = await bumpLatestVersion(tx, upload.artifact_id, upload.title, now)
          if (bumped === undefined) throw errors.artifact_not_found()
          number = bumped
        } else {
          await insertArtifact(tx, {
            id: artifactId,
            title: upload.title,
            owner_id: principal.user.id,
            visibility: 'private',
            latest_version: 1,
            created_at: now,
            updated_at: now,
            deleted_at: null,
            deleted_by: null,
          })
        }
        await insertVersion(tx, {
          id: versionId,
          artifact_id: artifactId,
          number,
          upload_id: upload.id,
          title: upload.title,
          entrypoint: upload.entrypoint,
          file_count: files.length,
          total_bytes: bundle.totalBytes,
          zip_sha256: upload.zip_sha256 ?? '',
          created_by: principal.user.id,
          created_at: now,
        })
        await insertVersionFiles(
          tx,
          files.map((f) => ({ version_id: versionId, ...f })),
        )
        const owner = upload.artifact_id ? (await getActiveArtifact(tx, artifactId))!.owner_id : principal.user.id
        await grantPublisherViewers(
          tx,
          ctx.config.publisherViewerMap,
          principal.user,
          { id: artifactId, owner_id: owner },
          now,
        )
        // Only the bundle that was validated: a PUT since then (taking over or done) wins.
        if (!(await markCommitted(tx, upload.id, upload.zip_sha256 ?? ''))) throw new AlreadyCommitted()
        await recordAudit(
          tx,
          principal,
          {
            action: 'version.publish',
            targetType: 'artifact',
            targetId: artifactId,
            details: { version: number, upload: upload.id, files: files.length },
          },
          now,
        )
      })
    } catch (err) {
      // No version refers to the manifest: a commit attempted again writes its own. Best effort:
      // a stray manifest is harmless, and the storage may be what failed.
      await ctx.store.removeUnpublishedManifest(versionId).catch((removal: unknown) => {
        ctx.logger.warn({ version: versionId, reason: (removal as Error).message }, 'unpublished manifest left behind')
      })
      if (err instanceof AlreadyCommitted || isUniqueViolation(err)) {
        const now = await getUpload(ctx.database.db, upload.id)
        throw now?.state === 'committed' ? errors.upload_committed() : errors.upload_in_progress()
      }
      throw err
    }
    ctx.counters.publishes.inc()
    await rm(staged, { force: true })
    return {
      artifact: { id: artifactId, title: upload.title, url: `${ctx.config.publicOrigin}/a/${artifactId}` },
      version: {
        number,
        entrypoint: upload.entrypoint,
        file_count: files.length,
        total_bytes: bundle.totalBytes,
        created_at: iso(now),
      },
    }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}
