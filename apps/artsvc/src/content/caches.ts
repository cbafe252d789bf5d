/**
 * Caches of the content origin's hot path. Both are safe by construction:
 * - blobs are content-addressed and immutable, so a cached body is always right;
 * - manifests belong to immutable versions.
 * Liveness (artifact not deleted, share not revoked or expired) is cached for at most one
 * second (never past a share's expiry) and dropped at once on this node when it revokes or
 * deletes; on PostgreSQL, other nodes drop it when the revocation's notification reaches
 * them (see `liveness-notify.ts`), and the second stays the bound if one is late.
 */
import type { VersionFileRow } from '../db/schema.ts'

/**
 * A bounded cache that evicts what was not used lately: "second chance" (CLOCK), the usual
 * approximation of least-recently-used. A hit only marks its entry, where a strict LRU moves
 * it to the end of the Map, a delete and an insert for every hit: two per content request on
 * the lean path, 3-5 % of its main thread in a profile. Eviction walks from the oldest
 * insertion: a marked entry loses its mark and moves to the end, the first unmarked one goes.
 */
export class LruCache<V> {
  readonly #maxEntries: number
  readonly #maxWeight: number
  readonly #weigh: (v: V) => number
  readonly #map = new Map<string, { value: V; used: boolean }>()
  #weight = 0

  constructor(maxEntries: number, maxWeight = Number.POSITIVE_INFINITY, weigh: (v: V) => number = () => 1) {
    this.#maxEntries = maxEntries
    this.#maxWeight = maxWeight
    this.#weigh = weigh
  }

  get(key: string): V | undefined {
    const entry = this.#map.get(key)
    if (entry === undefined) return undefined
    entry.used = true
    return entry.value
  }

  set(key: string, value: V) {
    const old = this.#map.get(key)
    if (old !== undefined) {
      this.#weight -= this.#weigh(old.value)
      this.#map.delete(key)
    }
    const weight = this.#weigh(value)
    // A value that can never fit is not kept, and costs the others nothing.
    if (weight > this.#maxWeight) return
    // Room is made before the new entry goes in, so that it is not the first unmarked entry
    // the walk meets. Ends: each turn evicts an entry or takes a mark away.
    while (this.#map.size > 0 && (this.#map.size >= this.#maxEntries || this.#weight + weight > this.#maxWeight)) {
      const [k, entry] = this.#map.entries().next().value as [string, { value: V; used: boolean }]
      this.#map.delete(k)
      if (entry.used) {
        entry.used = false
        this.#map.set(k, entry)
      } else this.#weight -= this.#weigh(entry.value)
    }
    this.#map.set(key, { value, used: false })
    this.#weight += weight
  }

  clear() {
    this.#map.clear()
    this.#weight = 0
  }
}

export const LIVENESS_TTL_MS = 1000
/** Bodies up to this size are also kept as latin1 strings by the lean path. */
export const LATIN1_MAX = 16 * 1024

export class ContentCaches {
  /** Manifests of up to 256 versions and 100 000 file rows in all. */
  readonly manifests = new LruCache<Map<string, VersionFileRow>>(256, 100_000, (m) => Math.max(1, m.size))
  /**
   * Small blobs (≤ 256 KiB), 64 MiB in all; bodies ≤ LATIN1_MAX count twice, as the lean
   * path also keeps them as latin1 strings (held weakly by the buffer, `fast.ts`).
   */
  readonly blobs = new LruCache<Buffer>(4096, 64 * 1024 * 1024, (b) => (b.length <= LATIN1_MAX ? 2 : 1) * b.length)
  readonly #live = new LruCache<number>(10_000)
  #generation = 0
  /** While false (a multi-node listener is down), nothing is remembered as live. */
  #enabled = true
  /** Responses answered by the lean path (`fast.ts`); operators and tests read it. */
  fastResponses = 0
  /** Liveness invalidations so far (local revocations and other nodes' notifications). */
  invalidations = 0

  isLive(key: string, now: number): boolean {
    const until = this.#live.get(key)
    return until !== undefined && until > now
  }

  /** Until when `key` is remembered as live (undefined: not remembered). */
  liveUntil(key: string): number | undefined {
    return this.#live.get(key)
  }

  /** Taken before a liveness query; `markLive` ignores results that an invalidation overtook. */
  generation(): number {
    return this.#generation
  }

  /** Remember a positive check until `now + LIVENESS_TTL_MS`, never past `until` (a share's expiry). */
  markLive(key: string, now: number, generation: number, until = Number.POSITIVE_INFINITY) {
    if (!this.#enabled || generation !== this.#generation) return
    this.#live.set(key, Math.min(now + LIVENESS_TTL_MS, until))
  }

  /** Called by this node's revoke and delete paths, and on other nodes' notifications. */
  invalidateLiveness() {
    this.#generation++
    this.invalidations++
    this.#live.clear()
  }

  /** Stop or resume remembering liveness (multi-node: while the notification listener is down). */
  setLivenessCaching(enabled: boolean) {
    this.#enabled = enabled
    this.invalidateLiveness()
  }
}

export const SMALL_BLOB = 256 * 1024
