/**
 * Capability shares: a secret link `/s/<secret>` (stored as its SHA-256) that pins one
 * version by default, may expire and may carry a view limit. Opening the link spends one
 * view and sets a short-lived share-session cookie for `/shared/<share>/`; a share whose
 * views are spent refuses new openings (410) while sessions already opened run out
 * normally. Revocation, expiry and artifact deletion stop every session at once.
 */
import { generateToken, hashToken, parseTimestampMillis } from '@gatehouse/kit'
import { requireOwner } from '../artifacts/access.ts'
import { getActiveArtifact, getVersion, versionNumbers } from '../artifacts/store.ts'
import { recordAudit } from '../audit/store.ts'
import type { Principal } from '../auth/principal.ts'
import { announceRevocation } from '../content/liveness-notify.ts'
import type { AppContext } from '../context.ts'
import type { ShareRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { iso, newId } from '../ids.ts'
import { getShareBySecretHash, listShares, revokeShare, spendView } from './store.ts'

export interface CreateShareRequest {
  /** Version number to pin (default: the newest at creation). */
  version?: number | undefined
  /** Follow the newest version instead of pinning one. */
  follow_latest?: boolean | undefined
  expires_at?: string | undefined
  max_views?: number | undefined
  label?: string | undefined
}

export function shareStatus(s: ShareRow, now: number): 'active' | 'revoked' | 'expired' | 'exhausted' {
  if (s.revoked_at !== null) return 'revoked'
  if (s.expires_at !== null && Number(s.expires_at) <= now) return 'expired'
  if (s.max_views !== null && Number(s.views) >= Number(s.max_views)) return 'exhausted'
  return 'active'
}

export function shareJson(s: ShareRow, now: number, pinned: number | null) {
  return {
    id: s.id,
    artifact: s.artifact_id,
    version: pinned,
    follow_latest: s.version_id === null,
    label: s.label,
    status: shareStatus(s, now),
    created_at: iso(Number(s.created_at)),
    expires_at: s.expires_at === null ? null : iso(Number(s.expires_at)),
    max_views: s.max_views === null ? null : Number(s.max_views),
    views: Number(s.views),
    revoked_at: s.revoked_at === null ? null : iso(Number(s.revoked_at)),
  }
}

export async function createShare(ctx: AppContext, principal: Principal, artifactId: string, body: CreateShareRequest) {
  const { artifact } = await requireOwner(ctx, principal, artifactId, 'share this artifact')
  const now = ctx.clock.now()
  if (body.follow_latest && body.version !== undefined)
    throw errors.share_invalid('give either version or follow_latest, not both')
  let versionId: string | null = null
  let pinned: number | null = null
  if (!body.follow_latest) {
    const number = body.version ?? Number(artifact.latest_version)
    const version = await getVersion(ctx.database.db, artifact.id, number)
    if (!version) throw errors.version_not_found()
    versionId = version.id
    pinned = number
  }
  let expiresAt: number | null = null
  if (body.expires_at !== undefined) {
    expiresAt = parseTimestampMillis(body.expires_at) ?? Number.NaN
    if (!Number.isFinite(expiresAt) || expiresAt <= now)
      throw errors.share_invalid('expires_at must be an RFC 3339 time in the future')
  }
  const secret = generateToken()
  const row: ShareRow = {
    id: newId(),
    secret_hash: hashToken(secret),
    artifact_id: artifact.id,
    version_id: versionId,
    label: body.label ?? null,
    created_by: principal.user.id,
    created_at: now,
    expires_at: expiresAt,
    max_views: body.max_views ?? null,
    views: 0,
    revoked_at: null,
    revoked_by: null,
  }
  await ctx.database.db.transaction().execute(async (tx) => {
    await tx.insertInto('shares').values(row).execute()
    await recordAudit(
      tx,
      principal,
      {
        action: 'share.create',
        targetType: 'share',
        targetId: row.id,
        details: {
          artifact: artifact.id,
          version: pinned,
          max_views: row.max_views,
          expires_at: body.expires_at ?? null,
        },
      },
      now,
    )
  })
  return { ...shareJson(row, now, pinned), url: `${ctx.config.publicOrigin}/s/${secret}` }
}

export async function listSharesOf(ctx: AppContext, principal: Principal, artifactId: string) {
  const { artifact } = await requireOwner(ctx, principal, artifactId, 'list shares of this artifact')
  const [shares, versions] = await Promise.all([
    listShares(ctx.database.db, artifact.id),
    versionNumbers(ctx.database.db, artifact.id),
  ])
  const numbers = new Map(versions.map((v) => [v.id, Number(v.number)]))
  const now = ctx.clock.now()
  return { shares: shares.map((s) => shareJson(s, now, s.version_id ? (numbers.get(s.version_id) ?? null) : null)) }
}

export async function revokeOwnShare(ctx: AppContext, principal: Principal, artifactId: string, shareId: string) {
  await requireOwner(ctx, principal, artifactId, 'revoke shares of this artifact')
  const now = ctx.clock.now()
  await ctx.database.db.transaction().execute(async (tx) => {
    const share = await tx.selectFrom('shares').select('artifact_id').where('id', '=', shareId).executeTakeFirst()
    if (!share || share.artifact_id !== artifactId) throw errors.share_not_found()
    if (await revokeShare(tx, shareId, principal.user.id, now)) {
      await announceRevocation(ctx, tx)
      await recordAudit(
        tx,
        principal,
        { action: 'share.revoke', targetType: 'share', targetId: shareId, details: { artifact: artifactId } },
        now,
      )
    }
  })
  ctx.caches.invalidateLiveness()
  return { share: shareId, artifact: artifactId, revoked: true as const }
}

/** Exchange a share secret for its share row, spending one view. */
export async function openShare(ctx: AppContext, secret: string): Promise<ShareRow> {
  const share = /^[A-Za-z0-9_-]{43}$/.test(secret)
    ? await getShareBySecretHash(ctx.database.db, hashToken(secret))
    : undefined
  if (!share) throw errors.share_not_found()
  const now = ctx.clock.now()
  const artifact = await getActiveArtifact(ctx.database.db, share.artifact_id)
  if (!artifact) throw errors.share_unavailable('has been revoked')
  if (!(await spendView(ctx.database.db, share.id, now))) {
    ctx.counters.shareOpenings.inc({ result: 'refused' })
    const status = shareStatus(
      await ctx.database.db.selectFrom('shares').selectAll().where('id', '=', share.id).executeTakeFirstOrThrow(),
      now,
    )
    throw errors.share_unavailable(
      status === 'exhausted' ? 'has reached its view limit' : status === 'expired' ? 'has expired' : 'has been revoked',
    )
  }
  ctx.counters.shareOpenings.inc({ result: 'opened' })
  return share
}
