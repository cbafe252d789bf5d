/**
 * A real PostgreSQL server for one test process: initdb + pg_ctl in a temp folder on a
 * free loopback port, no system service needed. initdb refuses to run as root, so as root
 * the server runs as the `postgres` user. One database per test via `createDatabase()`.
 */
import { execFileSync } from 'node:child_process'
import { chownSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { killQuietly, onExit } from './cleanup.ts'
import { freePort, isRoot, requireBinary, tempDir, userIds } from './env.ts'

export interface Postgres {
  port: number
  /** URL of the `postgres` maintenance database. */
  url: string
  /** Create an empty database and return its URL. */
  createDatabase(name?: string): Promise<string>
  /** Run one SQL statement on a database (default the maintenance one). */
  query(text: string, database?: string): Promise<pg.QueryResult>
  /**
   * CPU seconds the whole server has used so far: the postmaster, every process it has now
   * (backends, WAL writer, checkpointer, autovacuum) and those that already exited (the
   * postmaster's reaped-children time). Every database of the server counts. Linux only.
   */
  cpuSeconds(): number
  /**
   * Stop the server as a restart does (`pg_ctl -m fast`): every session is cut, and what was
   * committed stays (an immediate stop would lose the last commits: the server runs with
   * synchronous_commit off). `resume()` starts it again on the same port.
   */
  halt(): Promise<void>
  /** Start a halted server again, on the same port and data. */
  resume(): Promise<void>
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

function binDir(): string {
  let versions: string[] = []
  try {
    versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
  } catch {
    // fall through to the missing-binary error
  }
  const dir = versions.length > 0 ? `/usr/lib/postgresql/${versions[0]}/bin` : '/usr/lib/postgresql/15/bin'
  requireBinary(join(dir, 'initdb'), 'postgresql')
  return dir
}

/**
 * Start PostgreSQL (about a second).
 *
 * @example
 * const pgsrv = await startPostgres(); after(() => pgsrv.stop())
 * const url = await pgsrv.createDatabase()
 */
export async function startPostgres(): Promise<Postgres> {
  const bin = binDir()
  const dir = tempDir('gatehouse-pg-')
  const data = join(dir.path, 'data')
  const log = join(dir.path, 'postgres.log')
  const port = await freePort()
  let runAs: string[] = []
  if (isRoot) {
    const ids = userIds('postgres')
    if (!ids) throw new Error('running as root needs the postgres system user (installed with the postgresql package)')
    chownSync(dir.path, ids.uid, ids.gid)
    writeFileSync(log, '')
    chownSync(log, ids.uid, ids.gid)
    runAs = ['runuser', '-u', 'postgres', '--']
  }
  const run = (args: string[]) => {
    const [cmd, ...rest] = [...runAs, ...args]
    return execFileSync(cmd!, rest, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir.path })
  }
  const start = () =>
    run([
      join(bin, 'pg_ctl'),
      '-D',
      data,
      '-l',
      log,
      '-w',
      '-t',
      '30',
      'start',
      '-o',
      `-p ${port} -k ${dir.path} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`,
    ])
  try {
    run([join(bin, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'])
    start()
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string }
    dir.remove()
    throw new Error(`PostgreSQL did not start: ${e.stderr?.toString() || e.message}`)
  }
  const pidOf = () => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
    } catch {
      return undefined
    }
  }
  let pid = pidOf()
  let halted = false
  const unregister = onExit(() => {
    // A halted server's old pid may belong to another process by now.
    if (!halted) killQuietly(pid, 'SIGQUIT')
    dir.remove()
  })
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  let counter = 0
  const query = async (text: string, database = 'postgres') => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/${database}` })
    await client.connect()
    try {
      return await client.query(text)
    } finally {
      await client.end()
    }
  }
  let stopped = false
  const halt = async () => {
    if (stopped || halted) throw new Error('PostgreSQL is not running')
    run([join(bin, 'pg_ctl'), '-D', data, '-m', 'fast', '-w', 'stop'])
    halted = true
  }
  const resume = async () => {
    if (stopped || !halted) throw new Error('PostgreSQL is not halted')
    start()
    halted = false
    pid = pidOf()
  }
  const stop = async () => {
    if (stopped) return
    stopped = true
    if (!halted) {
      try {
        run([join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop'])
      } catch {
        killQuietly(pid, 'SIGQUIT')
      }
    }
    unregister()
    dir.remove()
  }
  const cpuSeconds = () => {
    if (pid === undefined) throw new Error('PostgreSQL left no postmaster.pid')
    // utime, stime, cutime, cstime in clock ticks (USER_HZ is 100 on Linux)
    const ticks = (p: number) => {
      const stat = readFileSync(`/proc/${p}/stat`, 'latin1')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      return [Number(f[11]), Number(f[12]), Number(f[13]), Number(f[14])]
    }
    // The postmaster's reaped-children time (cutime, cstime) is read before and after the
    // children: a backend reaped after the first read and before the children list was read
    // would be counted nowhere, so a snapshot counts only when no reap came in between.
    for (let attempt = 0; ; attempt++) {
      const first = ticks(pid)
      let total = 0
      const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(/\s+/)
      for (const kid of kids.filter(Boolean)) {
        try {
          const [u, s] = ticks(Number(kid))
          total += u! + s!
        } catch {
          // exited and reaped meanwhile: its time moves to the postmaster's cutime and cstime
        }
      }
      const last = ticks(pid)
      if (first[2] === last[2] && first[3] === last[3]) return (total + last.reduce((a, b) => a + b, 0)) / 100
      if (attempt >= 100) throw new Error('PostgreSQL reaps backends faster than their time can be read')
    }
  }
  return {
    port,
    url,
    query,
    cpuSeconds,
    halt,
    resume,
    async createDatabase(name?: string) {
      const db = name ?? `t_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 8)}`
      if (!/^[a-z_][a-z0-9_]*$/.test(db)) throw new TypeError(`database name ${db} must be lowercase snake_case`)
      await query(`CREATE DATABASE ${db}`)
      return `postgres://postgres@127.0.0.1:${port}/${db}`
    },
    stop,
    [Symbol.asyncDispose]: stop,
  }
}
