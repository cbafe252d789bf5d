/**
 * `websignal replay --log FILE --format F`: run detection over a whole file in memory and
 * print, one JSON line each, the signals the agent would send (for tuning thresholds).
 * Nothing is sent and the store is not touched. Thresholds and window come from
 * `--config` when given, else the defaults.
 */
import { statSync } from 'node:fs'
import { UsageError } from '@gatehouse/kit/cli/program.ts'
import { configPath, loadWebsignalConfig, parseInputs, windowField } from '../config.ts'
import { buildSignal, DEFAULT_THRESHOLDS, isScanner, type Thresholds } from '../detect/detect.ts'
import { BUILTIN_PATTERN_DIR, compilePatterns, loadPatternLists } from '../detect/patterns.ts'
import { type Aggregate, WindowAggregator } from '../detect/window.ts'
import { errors } from '../errors.ts'
import { InputPipeline } from '../pipeline.ts'
import { Tailer } from '../tail/tailer.ts'
import type { Io } from './io.ts'

export interface ReplayOptions {
  log: string
  format: string
  site?: string
  host?: string
  syslog?: boolean
  window?: string
  config?: string
}

export async function replayCommand(o: ReplayOptions, io: Io): Promise<void> {
  let input: ReturnType<typeof parseInputs>[number]
  try {
    ;[input] = parseInputs([
      {
        path: o.log.startsWith('/') ? o.log : `${process.cwd()}/${o.log}`,
        format: o.format,
        site: o.site ?? 'replay',
        ...(o.host ? { host: o.host } : {}),
        ...(o.syslog ? { syslog: true } : {}),
      },
    ]) as [ReturnType<typeof parseInputs>[number]]
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\[0\]\./g, '--'))
  }
  let thresholds: Thresholds = DEFAULT_THRESHOLDS
  let windowMs = 300_000
  let dirs = [BUILTIN_PATTERN_DIR]
  let disabled: string[] = []
  if (o.config !== undefined) {
    const c = loadWebsignalConfig(configPath(o.config))
    thresholds = c.thresholds
    windowMs = c.windowMs
    dirs = [...dirs, ...c.patternDirs]
    disabled = c.disabledLists
  }
  if (o.window !== undefined) {
    try {
      windowMs = windowField.parse(o.window, 'flag')
    } catch (err) {
      throw new UsageError(`--window: ${(err as Error).message}`)
    }
  }
  const agg = new WindowAggregator(windowMs, compilePatterns(loadPatternLists(dirs, disabled)))
  let parsed = 0
  let unmatched = 0
  const pipeline = new InputPipeline(
    input,
    agg,
    {
      parsed: (n) => (parsed += n),
      unmatched: (_r, n = 1) => (unmatched += n),
      observed: () => {},
    },
    o.host ?? 'replay',
  )
  let st: ReturnType<typeof statSync>
  try {
    st = statSync(input.path)
  } catch (err) {
    throw errors.log_unreadable(o.log, why((err as NodeJS.ErrnoException).code))
  }
  const totals = new Map<string, Aggregate>()
  const tailer = new Tailer(
    { path: input.path, start: { dev: st.dev, ino: st.ino, offset: 0 }, maxLineBytes: 16 * 1024 },
    {
      lines: (lines) => {
        pipeline.lines(lines, Date.now())
        // Fold per chunk so distinct paths are not capped by one drain's bound.
        for (const a of agg.drain()) {
          const k = `${a.host}\t${a.site}\t${a.ip}\t${a.windowStart}`
          const t = totals.get(k)
          if (!t) totals.set(k, a)
          else {
            t.requests += a.requests
            t.errors += a.errors
            t.successes += a.successes
            t.nonStatic += a.nonStatic
            t.suspicious += a.suspicious
            for (const p of a.paths) t.paths.add(p)
            t.lastSeenMs = Math.max(t.lastSeenMs, a.lastSeenMs)
          }
        }
      },
      tooLong: () => unmatched++,
      restart: () => {},
    },
  )
  await tailer.poll()
  await tailer.close()
  if (tailer.error) throw errors.log_unreadable(o.log, why(tailer.error))
  let signals = 0
  for (const a of [...totals.values()].sort((x, y) => x.windowStart - y.windowStart || (x.ip < y.ip ? -1 : 1))) {
    const t = { ...a, distinctPaths: a.paths.size }
    if (!isScanner(t, thresholds)) continue
    signals++
    io.out(`${JSON.stringify(buildSignal(a, t, a.lastSeenMs, windowMs))}\n`)
  }
  const n = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`
  io.err(`replay: ${n(parsed, 'line')} parsed, ${unmatched} unmatched, ${n(signals, 'signal')}\n`)
}

/** A file error in words, with its code (`no such file (ENOENT)`). */
function why(code: string | undefined): string {
  const words: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EISDIR: 'a directory, not a file',
    ENOTDIR: 'a part of the path is not a directory',
  }
  if (code === undefined) return 'error'
  return words[code] ? `${words[code]} (${code})` : code
}
