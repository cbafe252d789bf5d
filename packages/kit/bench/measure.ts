/** Timing helpers for the kit benchmarks: best of several rounds, in operations per second. */

export interface Figure {
  name: string
  ops: number
  /** Operations per second (best round). */
  opsPerSec: number
}

export interface Variant {
  name: string
  /** Operations one call of `fn` performs. */
  ops: number
  fn: () => unknown
  /** Untimed preparation before each call of `fn` (warm-up included). */
  setup?: () => unknown
}

/**
 * Run the variants in turn, `rounds` times, after one warm-up call each, and keep each
 * variant's best round. Interleaving the variants means drift on a shared machine (other
 * processes, CPU frequency) hits them alike, so their ratio stays meaningful.
 */
export async function bestOf(rounds: number, variants: Variant[]): Promise<Figure[]> {
  for (const v of variants) {
    await v.setup?.()
    await v.fn()
  }
  const bestSeconds = variants.map(() => Number.POSITIVE_INFINITY)
  for (let r = 0; r < rounds; r++) {
    for (const [i, v] of variants.entries()) {
      await v.setup?.()
      const t0 = process.hrtime.bigint()
      await v.fn()
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9
      bestSeconds[i] = Math.min(bestSeconds[i]!, seconds)
    }
  }
  return variants.map((v, i) => ({ name: v.name, ops: v.ops, opsPerSec: v.ops / bestSeconds[i]! }))
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

/** Time ratio of the kit against the baseline: > 1 means the kit is slower. */
export function ratio(kit: Figure, baseline: Figure): string {
  return (baseline.opsPerSec / kit.opsPerSec).toFixed(2)
}

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows
    .map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '))
    .join('\n')
}
