/**
 * A bounded frequency ranking (batch space-saving): counts keys exactly until it holds twice its
 * capacity, then keeps the `capacity` largest and remembers the largest count it dropped, so a
 * flood of distinct names costs at most 2 x capacity keys. A key's count is then a lower bound
 * and can be short by at most `dropped`; `truncated` says whether that ever happened.
 */
export class TopK {
  readonly capacity: number
  readonly counts = new Map<string, number>()
  /** Largest count of a key ever dropped (the error bound of every count). */
  dropped = 0
  truncated = false

  constructor(capacity: number) {
    this.capacity = capacity
  }

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n)
    if (this.counts.size >= 2 * this.capacity) this.#shrink()
  }

  #shrink(): void {
    const sorted = [...this.counts.entries()].sort((a, b) => b[1] - a[1])
    this.counts.clear()
    for (let i = 0; i < sorted.length; i++) {
      const [k, c] = sorted[i]!
      if (i < this.capacity) this.counts.set(k, c)
      else if (c > this.dropped) this.dropped = c
    }
    this.truncated = true
  }

  /** Add another ranking into this one (range queries merge their buckets). */
  merge(other: TopK): void {
    for (const [k, c] of other.counts) this.add(k, c)
    if (other.truncated) this.truncated = true
    this.dropped = Math.max(this.dropped, other.dropped)
  }

  top(limit: number): { key: string; count: number }[] {
    return [...this.counts.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, limit)
      .map(([key, count]) => ({ key, count }))
  }
}
