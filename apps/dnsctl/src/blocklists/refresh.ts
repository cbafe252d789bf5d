/**
 * The blocklist refresh job (daily on a schedule, or `dnsctl refresh blocklists`): download
 * every configured source, compile one RPZ file, roll it out to the resolver processes in turn
 * and write `blocklist-refresh.json`, which the health endpoint and the metrics read.
 * A failed source keeps its last good copy in the compiled list and makes the run (and so the
 * health) fail with its error; `last_success_at` only advances when every source succeeded and
 * every resolver loaded the result.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from '../files/atomic.ts'
import { readResult } from '../health/results.ts'
import { type ResolverInstance, rollOut } from '../resolver/rollout.ts'
import { compileBlocklist } from './compile.ts'
import { writeRpz } from './rpz.ts'
import { BlocklistService } from './service.ts'
import { type FetchLimits, type SourceOutcome, SourceStore } from './sources.ts'

export interface RefreshOptions {
  blocklistDir: string
  resultsDir: string
  instances: readonly ResolverInstance[]
  limits: FetchLimits
  loadTimeoutMs: number
  now?: () => Date
}

export interface RefreshReport {
  ok: boolean
  error: string | null
  finished_at: string
  last_success_at: string | null
  domain_count: number
  passthru_count: number
  generation: string
  compiled_file: string
  duration_ms: number
  sources: Omit<SourceOutcome, 'parsed'>[]
}

export class RefreshBusyError extends Error {
  override readonly name = 'RefreshBusyError'
}

/** One refresh at a time per blocklist folder, across processes (server schedule and CLI). */
async function lock(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, 'refresh.lock')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o644)
      await handle.writeFile(`${process.pid}\n`)
      await handle.close()
      return () => rm(path, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim())
      let alive = false
      try {
        if (pid > 0) alive = process.kill(pid, 0)
      } catch {
        alive = false
      }
      if (alive) throw new RefreshBusyError(`a blocklist refresh is already running (process ${pid})`)
      await rm(path, { force: true }) // left by a process that died
    }
  }
  throw new RefreshBusyError('cannot take the blocklist refresh lock')
}

export async function refreshBlocklists(options: RefreshOptions): Promise<RefreshReport> {
  const now = options.now ?? (() => new Date())
  const started = Date.now()
  await mkdir(options.blocklistDir, { recursive: true })
  await mkdir(options.resultsDir, { recursive: true })
  const unlock = await lock(options.blocklistDir)
  try {
    const config = await new BlocklistService(options.blocklistDir).read()
    const store = new SourceStore(options.blocklistDir)
    const outcomes = await Promise.all(config.sources.map((url) => store.refresh(url, options.limits, now())))
    const list = compileBlocklist({
      sources: outcomes.flatMap((o) => (o.parsed ? [o.parsed] : [])),
      allow: config.allow,
      deny: config.deny,
    })
    const generation = `${now().toISOString()}/${randomBytes(4).toString('hex')}`
    const compiledDir = join(options.blocklistDir, 'compiled')
    await mkdir(compiledDir, { recursive: true })
    const compiledFile = join(compiledDir, 'blocklist.rpz')
    await writeRpz(compiledFile, list, generation)
    const problems = outcomes.filter((o) => !o.ok).map((o) => `${o.url}: ${o.error}`)
    problems.push(...(await rollOut(compiledFile, generation, options.instances, options.loadTimeoutMs)))
    const previous = await readResult(options.resultsDir, 'blocklist-refresh.json')
    const finished = now().toISOString()
    const ok = problems.length === 0
    const report: RefreshReport = {
      ok,
      error: ok ? null : problems.join('; '),
      finished_at: finished,
      last_success_at: ok ? finished : previous.state === 'ok' ? previous.value.last_success_at : null,
      domain_count: list.blocked.size,
      passthru_count: list.passthru.length,
      generation,
      compiled_file: compiledFile,
      duration_ms: Date.now() - started,
      sources: outcomes.map(({ parsed: _, ...rest }) => rest),
    }
    await writeFileAtomic(join(options.resultsDir, 'blocklist-refresh.json'), `${JSON.stringify(report, null, 2)}\n`)
    return report
  } finally {
    await unlock()
  }
}
