/**
 * Reading kresd's counters through its control sockets (`<workdir>/control/<pid>`, one per
 * process; the socket takes Lua and answers in text mode after a `> ` prompt). Every socket in
 * the configured folders is asked; a stale socket of a process that died is skipped.
 */
import { readdir } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'

export interface InstanceStats {
  /** The control socket: identifies the process (its pid) for counter deltas. */
  socket: string
  queries: number
  cached: number
  nxdomain: number
  cacheEntries: number
}

const COMMAND = '{s = stats.list(), c = cache.count()}'

/** Evaluate a Lua expression that yields a table in one kresd process; its `tojson` text. */
export function kresdEval(socket: string, expression: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(socket)
    let buf = ''
    const timer = setTimeout(() => {
      c.destroy()
      reject(new Error(`no answer from ${socket} within ${timeoutMs} ms`))
    }, timeoutMs)
    c.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    c.on('data', (d) => {
      buf += d
      // The answer is a quoted Lua string followed by the next prompt.
      const end = buf.lastIndexOf("}'")
      if (end !== -1 && buf.indexOf('> ', end) !== -1) {
        clearTimeout(timer)
        c.destroy()
        resolve(buf.slice(buf.indexOf("'{") + 1, end + 1))
      }
    })
    c.write(`tojson(${expression})\n`)
  })
}

function count(obj: Record<string, unknown>, key: string): number {
  const v = obj[key]
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0
}

/** Counters of every reachable kresd process under `controlDirs`. */
export async function readKresdStats(controlDirs: readonly string[], timeoutMs = 2000): Promise<InstanceStats[]> {
  const out: InstanceStats[] = []
  for (const dir of controlDirs) {
    const names = await readdir(dir).catch(() => [] as string[])
    for (const name of names) {
      const socket = join(dir, name)
      try {
        const parsed = JSON.parse(await kresdEval(socket, COMMAND, timeoutMs)) as {
          s?: Record<string, unknown>
          c?: unknown
        }
        const s = parsed.s ?? {}
        out.push({
          socket,
          queries: count(s, 'answer.total'),
          cached: count(s, 'answer.cached'),
          nxdomain: count(s, 'answer.nxdomain'),
          cacheEntries: typeof parsed.c === 'number' && parsed.c >= 0 ? parsed.c : 0,
        })
      } catch {
        // A socket left by a process that exited, or a busy process: skipped this round.
      }
    }
  }
  return out
}
