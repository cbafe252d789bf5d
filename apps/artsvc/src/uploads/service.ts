/**
 * The upload flow of the spec: (1) create a session with title and entrypoint, (2) PUT
 * the ZIP with the upload token, (3) commit as the same signed-in user with the token.
 * The ZIP is streamed to a local staging file, bounded by ARTSVC_MAX_BUNDLE_BYTES.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { generateToken, hashToken, mkdirPrivate, PRIVATE_FILE_MODE, verifyToken } from '@gatehouse/kit'
import { requirePublisher } from '../artifacts/access.ts'
import type { Principal } from '../auth/principal.ts'
import { checkEntrypoint } from '../bundles/names.ts'
import type { AppContext } from '../context.ts'
import type { UploadRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { iso, newId } from '../ids.ts'
import { abandonAttempt, finishAttempt, getUpload, startAttempt } from './store.ts'

export interface CreateUploadRequest {
  title: string
  entrypoint: string
  /** Publish a new version of this artifact instead of creating one. */
  artifact?: string | undefined
}

export async function createUpload(ctx: AppContext, principal: Principal, body: CreateUploadRequest) {
  const entrypoint = checkEntrypoint(body.entrypoint)
  if (typeof entrypoint !== 'string') throw errors.invalid_entrypoint(entrypoint.detail)
  if (body.artifact !== undefined) await requirePublisher(ctx, principal, body.artifact)
  const now = ctx.clock.now()
  const token = generateToken()
  const id = newId()
  const expiresAt = now + ctx.config.uploadTtl
  await ctx.database.db
    .insertInto('uploads')
    .values({
      id,
      token_hash: hashToken(token),
      user_id: principal.user.id,
      artifact_id: body.artifact ?? null,
      title: body.title,
      entrypoint,
      state: 'open',
      size: null,
      zip_sha256: null,
      put_attempt: null,
      created_at: now,
      expires_at: expiresAt,
    })
    .execute()
  return {
    id,
    upload_url: `${ctx.config.publicOrigin}/upload/${id}`,
    commit_url: `${ctx.config.publicOrigin}/api/v1/uploads/${id}/commit`,
    upload_token: token,
    expires_at: iso(expiresAt),
    max_bytes: ctx.config.maxBundleBytes,
    max_files: ctx.config.maxFiles,
  }
}

/** Load an upload and check its token; expired and committed sessions are refused. */
export async function authorizeUpload(ctx: AppContext, id: string, token: string | undefined): Promise<UploadRow> {
  if (!token) throw errors.upload_token_required()
  const upload = /^[A-Za-z0-9_-]{16}$/.test(id) ? await getUpload(ctx.database.db, id) : undefined
  // Same answer for an unknown id and a wrong token: the token is the credential.
  if (!upload || !verifyToken(token, upload.token_hash)) throw errors.upload_token_invalid()
  if (upload.state === 'committed') throw errors.upload_committed()
  if (Number(upload.expires_at) <= ctx.clock.now()) throw errors.upload_expired()
  return upload
}

/** The received bundle of an upload: named by its SHA-256, so a file can only ever hold the bytes the row names. */
export function stagingPath(ctx: AppContext, id: string, sha256: string): string {
  return join(ctx.stagingDir, `${id}.${sha256}.zip`)
}

/**
 * Stream the body to a temp file, counting bytes, then make it the upload's bundle.
 *
 * Every PUT takes over the session (`put_attempt`), including from a PUT that is still
 * marked as receiving: that one may have died with its node or lost its client, and
 * nothing else could ever release it. Only the newest PUT can complete (its final update
 * requires its own attempt id); an older one that finishes later answers
 * `409 upload_in_progress` and changes nothing. A PUT that fails puts the session back to
 * `received` (if an earlier bundle was complete, which stays in place) or `open`.
 * Committed sessions are never touched (`authorizeUpload` and the conditional updates).
 */
export async function receiveBundle(
  ctx: AppContext,
  upload: UploadRow,
  body: Readable,
  declaredLength: number | undefined,
) {
  const limit = ctx.config.maxBundleBytes
  // The rest of the body is never read: close the connection after answering, or the
  // unread bytes would be taken for the next request on a kept-alive connection.
  const tooLarge = () => errors.bundle_too_large.with({ headers: { connection: 'close' } }, limit)
  if (declaredLength !== undefined && declaredLength > limit) throw tooLarge()
  const attempt = randomBytes(12).toString('base64url')
  const previous = await startAttempt(ctx.database.db, upload.id, attempt)
  if (previous === undefined) throw errors.upload_committed()
  await mkdirPrivate(ctx.stagingDir)
  const temp = join(ctx.stagingDir, `${upload.id}.part-${randomBytes(6).toString('hex')}`)
  const hash = createHash('sha256')
  let size = 0
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length
      if (size > limit) return done(tooLarge())
      hash.update(chunk)
      done(null, chunk)
    },
  })
  let sha256: string
  try {
    await pipeline(body, meter, createWriteStream(temp, { mode: PRIVATE_FILE_MODE }))
    if (size === 0) throw errors.bundle_invalid.with({ details: { reason: 'empty_body' } }, 'the body is empty')
    sha256 = hash.digest('hex')
    await rename(temp, stagingPath(ctx, upload.id, sha256))
  } catch (err) {
    await rm(temp, { force: true })
    await abandonAttempt(ctx.database.db, upload.id, attempt)
    throw err
  }
  if (!(await finishAttempt(ctx.database.db, upload.id, attempt, size, sha256))) {
    // A newer PUT took over meanwhile; its bundle (or its failure) decides. Our file stays
    // only if it is also the current bundle (same bytes); maintenance removes strays.
    const now = await getUpload(ctx.database.db, upload.id)
    if (now?.zip_sha256 !== sha256) await rm(stagingPath(ctx, upload.id, sha256), { force: true })
    throw errors.upload_in_progress()
  }
  // The replaced bundle goes. (A newer PUT of exactly those bytes, started and finished in
  // the moment between our update and this removal, would lose its file; its commit then
  // answers 409 upload_not_received and the client uploads again.)
  if (previous && previous !== sha256) await rm(stagingPath(ctx, upload.id, previous), { force: true })
  return { id: upload.id, size, sha256, state: 'received' as const }
}
