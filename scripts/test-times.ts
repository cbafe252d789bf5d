/**
 * A second reporter for `npm test`: after the usual output, the test files that took longest,
 * so a suite that grows slow is seen in the run that made it slow. A file's time is the sum of
 * its top-level tests and suites (hooks inside a suite count; starting the process does not).
 */
import { relative } from 'node:path'

interface TestEvent {
  type: string
  data: { nesting?: number; file?: string; details?: { duration_ms?: number } }
}

const SHOWN = 12

export default async function* fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const perFile = new Map<string, number>()
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const { nesting, file, details } = event.data
    if (nesting !== 0 || file === undefined || details?.duration_ms === undefined) continue
    perFile.set(file, (perFile.get(file) ?? 0) + details.duration_ms)
  }
  if (perFile.size === 0) return
  const sorted = [...perFile].sort((a, b) => b[1] - a[1])
  const total = sorted.reduce((sum, [, ms]) => sum + ms, 0)
  const width = Math.max(...sorted.slice(0, SHOWN).map(([file]) => relative(process.cwd(), file).length))
  let out = `\nslowest test files (${perFile.size} files, ${(total / 1000).toFixed(0)} s of tests in all):\n`
  for (const [file, ms] of sorted.slice(0, SHOWN)) {
    out += `  ${relative(process.cwd(), file).padEnd(width)}  ${(ms / 1000).toFixed(1).padStart(6)} s\n`
  }
  yield out
}
