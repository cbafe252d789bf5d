/** Plans as the provider's batch requests (deletes, patches, posts). */
import type { Batch } from './client.ts'
import type { Plan } from './plan.ts'
import { proxiable, toApi } from './records.ts'

export function toBatch(zone: string, plan: Plan): Batch {
  return {
    deletes: plan.deletes.map((r) => ({ id: r.id })),
    patches: plan.updates.map((u) => ({
      id: u.id,
      ttl: u.to.ttl,
      comment: u.to.comment,
      tags: u.to.tags,
      ...(proxiable(u.type) ? { proxied: u.to.proxied } : {}),
    })),
    posts: plan.creates.map((c) => toApi(zone, c)),
  }
}

/**
 * The batch split into requests of at most `limit` operations, keeping the provider's order
 * (deletes, then patches, then posts) across them, so a replaced name is free before its new
 * record is posted.
 */
export function splitBatch(batch: Batch, limit: number): Batch[] {
  const ops = [
    ...batch.deletes.map((d) => ['deletes', d] as const),
    ...batch.patches.map((p) => ['patches', p] as const),
    ...batch.posts.map((p) => ['posts', p] as const),
  ]
  const out: Batch[] = []
  for (let i = 0; i < ops.length; i += limit) {
    const part: Batch = { deletes: [], patches: [], posts: [] }
    for (const [kind, op] of ops.slice(i, i + limit)) (part[kind] as unknown[]).push(op)
    out.push(part)
  }
  return out
}
