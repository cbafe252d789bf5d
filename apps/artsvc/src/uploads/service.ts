/**
 * The upload flow of the spec: (1) create a session with title and entrypoint, (2) PUT
 * the ZIP with the upload token, (3) commit as the same signed-in user with the token.
 * The ZIP is streamed to a local staging file, bounded by ARTSVC_MAX_BUNDLE_BYTES.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { generateToken, hashToken, verifyToken } from '@gatehouse/kit'
import { requirePublisher } from '../artifacts/access.ts'
import type { Principal } from '../auth/principal.ts'
import { checkEntrypoint } from '../bundles/names.ts'
import type { AppContext } from '../context.ts'
import type { UploadRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { iso, newId } from '../ids.ts'
import { getUpload, transition } from './store.ts'

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
  const now = ctx.now()
  const token = generateToken()
  const id = newId()
  const expiresAt = now + ctx.config.uploadTtl
  await ctx.db
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
  const upload = /^[A-Za-z0-9_-]{16}$/.test(id) ? await getUpload(ctx.db, id) : undefined
  // Same answer for an unknown id and a wrong token: the token is the credential.
  if (!upload || !verifyToken(token, upload.token_hash)) throw errors.upload_token_invalid()
  if (upload.state === 'committed') throw errors.upload_committed()
  if (Number(upload.expires_at) <= ctx.now()) throw errors.upload_expired()
  return upload
}

export function stagingPath(ctx: AppContext, id: string): string {
  return join(ctx.stagingDir, `${id}.zip`)
}

/** Stream the body to the staging file, counting bytes; the previous bundle stays until the new one is complete. */
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
  const previous = upload.state === 'received' ? 'received' : 'open'
  if (!(await transition(ctx.db, upload.id, ['open', 'received'], 'receiving'))) throw errors.upload_in_progress()
  await mkdir(ctx.stagingDir, { recursive: true })
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
  try {
    await pipeline(body, meter, createWriteStream(temp))
    if (size === 0) throw errors.bundle_invalid('the body is empty')
    await rename(temp, stagingPath(ctx, upload.id))
  } catch (err) {
    await rm(temp, { force: true })
    await transition(ctx.db, upload.id, ['receiving'], previous)
    throw err
  }
  const sha256 = hash.digest('hex')
  await transition(ctx.db, upload.id, ['receiving'], 'received', { size, zip_sha256: sha256 })
  return { id: upload.id, size, sha256, state: 'received' as const }
}
