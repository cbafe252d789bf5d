/**
 * `websignal replay --log FILE`: run detection over a whole file in memory and print, one JSON
 * line each, the signals the agent would send (for tuning thresholds). Nothing is sent and the
 * store is not touched. With `--config`, thresholds, window and pattern lists come from that
 * config, and the log is read as `serve` reads the input it belongs to (format, syslog, JSON
 * fields, site, host); flags override. Without it, the defaults and `--format` (required).
 */

import { statSync } from 'node:fs'
import { hostname } from 'node:os'
import { basename, dirname, resolve } from 'node:path'
import { UsageError } from '@gatehouse/kit/cli/program.ts'
import { terminalJson } from '@gatehouse/kit/terminal.ts'
import { configPath, type InputConfig, loadWebsignalConfig, parseInputs, windowField } from '../config.ts'
import { buildSignal, DEFAULT_THRESHOLDS, isScanner, type Thresholds } from '../detect/detect.ts'
import { BUILTIN_PATTERN_DIR, compilePatterns, loadPatternLists } from '../detect/patterns.ts'
import { type Aggregate, WindowAggregator } from '../detect/window.ts'
import { errors } from '../errors.ts'
import { InputPipeline } from '../pipeline.ts'
import { Tailer } from '../tail/tailer.ts'
import type { Io } from './io.ts'

export interface ReplayOptions {
  log: string
  format?: string
  site?: string
  host?: string
  syslog?: boolean
  window?: string
  config?: string
}

/**
 * The config's input a log file belongs to: the one at that path, else the one it is a rotated
 * name of (`access.log.1`, `access.log-20261125` beside `access.log`, the names the tailer looks
 * for), else the only input when there is one (a copy taken elsewhere to tune on). Undefined
 * when several inputs leave it open.
 */
export function inputForLog(inputs: InputConfig[], log: string): InputConfig | undefined {
  const exact = inputs.find((i) => i.path === log)
  if (exact) return exact
  const rotated = inputs
    .filter((i) => dirname(i.path) === dirname(log) && basename(log).startsWith(basename(i.path)))
    // `access.log.1` belongs to `access.log`, not to an `access` beside it.
    .sort((a, b) => b.path.length - a.path.length)
  if (rotated[0]) return rotated[0]
  return inputs.length === 1 ? inputs[0] : undefined
}

export async function replayCommand(o: ReplayOptions, io: Io): Promise<void> {
  const path = resolve(o.log)
  // Nothing is sent: the secrets the config names are not read (they may be the agent user's only).
  const config =
    o.config === undefined
      ? undefined
      : loadWebsignalConfig(configPath(o.config), process.env, { readSecretFiles: false })
  const from = config === undefined ? undefined : inputForLog(config.inputs, path)
  if (o.format === undefined && from === undefined) {
    throw new UsageError(
      config === undefined
        ? '--format: required (or --config with the input this log belongs to)'
        : `--format: required: ${path} is not one of the config's inputs (${config.inputs.map((i) => i.path).join(', ')}) nor a rotated name of one`,
    )
  }
  const format = o.format ?? from!.format
  const host = o.host ?? from?.host
  // `serve` names lines that carry no host by the machine's host name: an input of the config is read the same way.
  const fallbackHost = from ? hostname().toLowerCase() : 'replay'
  let input: InputConfig
  try {
    ;[input] = parseInputs([
      {
        path,
        format,
        site: o.site ?? from?.site ?? 'replay',
        ...(host === undefined ? {} : { host }),
        ...(o.syslog || from?.syslog ? { syslog: true } : {}),
        // Field names belong to the input's JSON format: not to another format a flag asks for.
        ...(format === 'json' && from?.format === 'json' && Object.keys(from.jsonFields).length > 0
          ? { json_fields: from.jsonFields }
          : {}),
      },
    ]) as [InputConfig]
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\[0\]\./g, '--'))
  }
  let thresholds: Thresholds = DEFAULT_THRESHOLDS
  let windowMs = 300_000
  let dirs = [BUILTIN_PATTERN_DIR]
  let disabled: string[] = []
  if (config !== undefined) {
    thresholds = config.thresholds
    windowMs = config.windowMs
    dirs = [...dirs, ...config.patternDirs]
    disabled = config.disabledLists
  }
  if (o.window !== undefined) {
    try {
      windowMs = windowField.parse(o.window, 'flag')
    } catch (err) {
      throw new UsageError(`--window: ${(err as Error).message}`)
    }
  }
  if (from !== undefined) {
    const given = [o.format && '--format', o.site && '--site', o.host && '--host', o.syslog && '--syslog'].filter(
      Boolean,
    )
    io.err(
      `replay: read as the input ${from.path} of ${config!.configPath} (${input.format}${input.syslog ? ' in syslog' : ''}, site ${input.site}, host ${input.host ?? `${fallbackHost} (this machine)`})${given.length > 0 ? `, with ${given.join(', ')} from the command line` : ''}\n`,
    )
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
    fallbackHost,
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
    io.out(`${terminalJson(buildSignal(a, t, a.lastSeenMs, windowMs))}\n`)
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
