/**
 * `dnsctl backup DIR`: what a restore needs, taken while `serve` runs, in a new owner-only
 * folder: `dnsctl.db` (the kit's `backupDatabase`: one consistent, checked copy), the file of
 * every zone that copy manages (`zones/<zone>.zone`: the current revision lives only there;
 * the database holds the earlier ones), and the published blocklist configuration
 * (`blocklists/`). The zone files are read after the database, so each is at least as new as
 * the copy; a zone created in between is not in the copy and not taken. Knot writes nothing
 * of these files: dnsctl replaces them whole (rename), so each read is one revision.
 */
import { constants } from 'node:fs'
import { copyFile, mkdir, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { backupDatabase } from '@gatehouse/kit/cli/backup.ts'
import { CliError } from '@gatehouse/kit/cli/program.ts'
import { accessOptions, openDatabase } from '@gatehouse/kit/db/database.ts'
import type { Config } from '../config.ts'
import { migrations } from '../db/migrations/index.ts'
import type { DB } from '../db/schema.ts'
import { Knotc } from '../knot/knotc.ts'

export async function backup(config: Config, target: string): Promise<string> {
  try {
    await mkdir(target, { mode: 0o700 })
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    throw new CliError(
      e.code === 'EEXIST' ? `${target} exists; back up to a new folder` : `cannot create ${target}: ${e.message}`,
    )
  }
  try {
    const database = await openDatabase<DB>({
      url: config.database,
      migrations,
      ...accessOptions('read'),
      missingHint: 'give --state-dir or --database, set DNSCTL_STATE_DIR or DNSCTL_DATABASE, or --config',
    })
    let copied: string
    try {
      copied = backupDatabase(database, join(target, 'dnsctl.db'))
    } finally {
      await database.close()
    }
    const zones = await copyZoneFiles(join(target, 'dnsctl.db'), config, join(target, 'zones'))
    const blocklists = await copyBlocklists(config.blocklistDir, join(target, 'blocklists'))
    const checked = copied.slice(copied.lastIndexOf(' (')) // " (1.2 MiB, checked)"
    return `backed up to ${target}: the database${checked}, ${zones} zone file${zones === 1 ? '' : 's'}${blocklists ? ', the blocklist configuration' : ''}`
  } catch (err) {
    await rm(target, { recursive: true, force: true })
    if (err instanceof CliError) throw err
    throw new CliError(`backup to ${target} failed, nothing kept: ${(err as Error).message}`)
  }
}

async function copyZoneFiles(copy: string, config: Config, into: string): Promise<number> {
  const db = new DatabaseSync(copy, { readOnly: true })
  let names: string[]
  try {
    names = (db.prepare('select name from zones order by name').all() as { name: string }[]).map((r) => r.name)
  } finally {
    db.close()
  }
  await mkdir(into, { mode: 0o700 })
  const knotc = new Knotc({ ...config.knot, timeoutMs: 0 }) // only for its file names: knotc never runs
  for (const zone of names) {
    const file = knotc.zoneFile(zone)
    try {
      await copyFile(file, join(into, `${zone.replace(/\.$/, '')}.zone`), constants.COPYFILE_EXCL)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      throw new CliError(
        `zone ${zone}: its file ${file} is missing (deleted while the backup ran?); nothing kept, run the backup again`,
      )
    }
  }
  return names.length
}

/** The generation `current` points to, resolved once so the three lists are one configuration. */
async function copyBlocklists(dir: string, into: string): Promise<boolean> {
  let generation: string
  try {
    generation = await realpath(join(dir, 'current'))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw err
  }
  await mkdir(into, { mode: 0o700 })
  for (const name of await readdir(generation)) {
    await writeFile(join(into, name), await readFile(join(generation, name)), { flag: 'wx', mode: 0o600 })
  }
  return true
}
