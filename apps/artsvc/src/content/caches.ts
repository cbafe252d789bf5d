/**
 * Caches of the content origin's hot path. Both are safe by construction:
 * - blobs are content-addressed and immutable, so a cached body is always right;
 * - manifests belong to immutable versions.
 * Liveness (artifact not deleted, share not revoked or expired) is cached for at most one
 * second and dropped at once on this node when it revokes or deletes; other nodes of a
 * multi-node deployment notice within that second.
 */
import type { VersionFileRow } from '../db/schema.ts'

export class LruCache<V> {
  readonly #maxEntries: number
  readonly #maxWeight: number
  readonly #weigh: (v: V) => number
  readonly #map = new Map<string, V>()
  #weight = 0

  constructor(maxEntries: number, maxWeight = Number.POSITIVE_INFINITY, weigh: (v: V) => number = () => 1) {
    this.#maxEntries = maxEntries
    this.#maxWeight = maxWeight
    this.#weigh = weigh
  }

  get(key: string): V | undefined {
    const v = this.#map.get(key)
    if (v !== undefined) {
      this.#map.delete(key)
      this.#map.set(key, v)
    }
    return v
  }

  set(key: string, value: V) {
    const old = this.#map.get(key)
    if (old !== undefined) {
      this.#weight -= this.#weigh(old)
      this.#map.delete(key)
    }
    this.#map.set(key, value)
    this.#weight += this.#weigh(value)
    while (this.#map.size > this.#maxEntries || this.#weight > this.#maxWeight) {
      const [k, v] = this.#map.entries().next().value as [string, V]
      this.#map.delete(k)
      this.#weight -= this.#weigh(v)
    }
  }

  clear() {
    this.#map.clear()
    this.#weight = 0
  }
}

export const LIVENESS_TTL_MS = 1000

export class ContentCaches {
  readonly manifests = new LruCache<Map<string, VersionFileRow>>(256)
  /** Small blobs (≤ 256 KiB), 64 MiB in all. */
  readonly blobs = new LruCache<Buffer>(4096, 64 * 1024 * 1024, (b) => b.length)
  readonly #live = new LruCache<number>(10_000)
  /** Responses answered by the lean path (`fast.ts`); operators and tests read it. */
  fastResponses = 0

  isLive(key: string, now: number): boolean {
    const until = this.#live.get(key)
    return until !== undefined && until > now
  }

  markLive(key: string, now: number) {
    this.#live.set(key, now + LIVENESS_TTL_MS)
  }

  /** Called by this node's revoke and delete paths. */
  invalidateLiveness() {
    this.#live.clear()
  }
}

export const SMALL_BLOB = 256 * 1024
