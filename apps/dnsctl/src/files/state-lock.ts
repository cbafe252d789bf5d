/**
 * One dnsctl per state folder: the publication journal and the zone locks assume a single
 * writer. A pid file taken with O_EXCL; a file left by a process that no longer runs (a
 * crash) is taken over.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { StartupError } from '@gatehouse/kit'

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Take the lock; returns the release function. */
export function lockStateDir(dir: string): () => void {
  const file = join(dir, 'dnsctl.pid')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' })
      return () => rmSync(file, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new StartupError(`cannot create ${file}: ${(err as Error).message}`)
      }
      const pid = Number(readFileSync(file, 'utf8').trim())
      if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new StartupError(`another dnsctl (pid ${pid}) is using the state folder ${dir}`)
      }
      rmSync(file, { force: true })
    }
  }
  throw new StartupError(`cannot take the lock ${file}`)
}
