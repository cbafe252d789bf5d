/** One queue per key: batches on one zone run one after another, other zones in parallel. */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>()

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve()
    let release!: () => void
    const mine = new Promise<void>((r) => {
      release = r
    })
    const tail = previous.then(() => mine)
    this.#tails.set(key, tail)
    await previous
    try {
      return await fn()
    } finally {
      release()
      if (this.#tails.get(key) === tail) this.#tails.delete(key)
    }
  }

  /** Wait until every queued batch has finished (graceful shutdown). */
  async drain(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all([...this.#tails.values()])
  }
}
