/** A one-line progress bar on a terminal (stderr), redrawn at most every 100 ms. */
export class ProgressBar {
  readonly #total: number
  readonly #out: NodeJS.WriteStream
  #done = 0
  #last = 0

  constructor(total: number, out: NodeJS.WriteStream) {
    this.#total = Math.max(total, 1)
    this.#out = out
  }

  add(bytes: number) {
    this.#done += bytes
    const now = Date.now()
    if (now - this.#last >= 100 || this.#done >= this.#total) {
      this.#last = now
      this.#draw()
    }
  }

  finish() {
    this.#draw()
    this.#out.write('\n')
  }

  #draw() {
    const width = 30
    const ratio = Math.min(this.#done / this.#total, 1)
    const filled = Math.round(ratio * width)
    const mib = (n: number) => (n / 1048576).toFixed(1)
    this.#out.write(
      `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}% ${mib(this.#done)}/${mib(this.#total)} MiB`,
    )
  }
}
