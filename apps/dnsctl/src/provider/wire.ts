/** Plans and records as the provider endpoints answer them. */
import type { Plan } from './plan.ts'
import type { ProviderRecord } from './records.ts'

/** Records on the wire: the canonical value as `content`. */
export function recordWire(r: ProviderRecord) {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    ttl: r.ttl,
    content: r.value,
    proxied: r.proxied,
    comment: r.comment,
    tags: r.tags,
  }
}

export function planWire(plan: Plan) {
  return {
    deletes: plan.deletes.map((r) => ({ id: r.id, name: r.name, type: r.type, ttl: r.ttl, content: r.value })),
    updates: plan.updates.map((u) => ({
      id: u.id,
      name: u.name,
      type: u.type,
      content: u.value,
      from: u.from,
      to: u.to,
    })),
    creates: plan.creates.map((c) => ({
      name: c.name,
      type: c.type,
      ttl: c.ttl,
      content: c.value,
      proxied: c.proxied,
      comment: c.comment,
      tags: c.tags,
    })),
  }
}

export function summaryOf(plan: Plan) {
  return { deletes: plan.deletes.length, updates: plan.updates.length, creates: plan.creates.length }
}

export function describePlan(plan: Plan): string {
  const parts = [
    ...plan.deletes.map((r) => `${r.name} ${r.type} ${r.value} still present`),
    ...plan.updates.map((u) => `${u.name} ${u.type} ${u.value} has other TTL or attributes`),
    ...plan.creates.map((c) => `${c.name} ${c.type} ${c.value} missing`),
  ]
  return parts.slice(0, 10).join('; ') + (parts.length > 10 ? `; and ${parts.length - 10} more` : '')
}
