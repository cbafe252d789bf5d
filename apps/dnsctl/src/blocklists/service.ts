/**
 * Blocklist configuration: sources (HTTPS URLs), allow and deny domain lists, normalised,
 * de-duplicated and sorted. Published as three files in a fresh generation folder that a
 * `current` symlink is atomically switched to, so the compile job never sees a mix of two
 * configurations. The revision is derived from the normalised content.
 */
import { createHash } from 'node:crypto'
import { mkdir, open, readdir, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { errors } from '../errors.ts'
import { KeyedMutex } from '../publish/mutex.ts'
import { NameError, resolveName } from '../zonefile/index.ts'

export const MAX_SOURCES = 32
const FILES = { sources: 'sources.list', allow: 'allow.list', deny: 'deny.list' } as const

export interface BlocklistConfig {
  sources: string[]
  allow: string[]
  deny: string[]
}

export function normaliseSources(sources: readonly string[]): string[] {
  const out = new Set<string>()
  sources.forEach((raw, i) => {
    let url: URL
    try {
      url = new URL(raw.trim())
    } catch {
      throw errors.invalid_blocklist_source(`sources[${i}] is not an absolute URL: ${JSON.stringify(raw)}`)
    }
    if (url.protocol !== 'https:') {
      throw errors.invalid_blocklist_source(`sources[${i}] must use HTTPS, got ${url.protocol.replace(':', '')}`)
    }
    if (url.username || url.password) {
      throw errors.invalid_blocklist_source(`sources[${i}] must not carry credentials in the URL`)
    }
    url.hash = ''
    out.add(url.href)
  })
  if (out.size > MAX_SOURCES) throw errors.too_many_blocklist_sources(out.size)
  return [...out].sort()
}

export function normaliseDomains(list: readonly string[], field: string): string[] {
  const out = new Set<string>()
  list.forEach((raw, i) => {
    const text = raw.trim().toLowerCase().replace(/\.$/, '')
    if (text === '') throw errors.invalid_domain(`${field}[${i}] is empty`)
    let name: string
    try {
      name = resolveName(`${text}.`, '.')
    } catch (err) {
      if (err instanceof NameError) throw errors.invalid_domain(`${field}[${i}]: ${err.message}`)
      throw err
    }
    if (name.includes('*'))
      throw errors.invalid_domain(`${field}[${i}]: wildcards are not used; a domain covers its subdomains`)
    out.add(name.slice(0, -1))
  })
  return [...out].sort()
}

export function normaliseConfig(input: BlocklistConfig): BlocklistConfig {
  return {
    sources: normaliseSources(input.sources),
    allow: normaliseDomains(input.allow, 'allow'),
    deny: normaliseDomains(input.deny, 'deny'),
  }
}

export function blocklistRevision(config: BlocklistConfig): string {
  return createHash('sha256').update(JSON.stringify(config)).digest('base64url').slice(0, 27)
}

function lines(list: string[]): string {
  return list.length === 0 ? '' : `${list.join('\n')}\n`
}

function parseLines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '')
}

async function writeSynced(path: string, data: string) {
  const handle = await open(path, 'w', 0o644)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

async function fsyncDir(dir: string) {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export class BlocklistService {
  readonly dir: string
  readonly #lock = new KeyedMutex()
  constructor(dir: string) {
    this.dir = dir
  }

  /** The published configuration (empty lists before the first publication). */
  async read(): Promise<BlocklistConfig & { revision: string }> {
    const current = join(this.dir, 'current')
    const config: BlocklistConfig = { sources: [], allow: [], deny: [] }
    try {
      for (const key of Object.keys(FILES) as (keyof typeof FILES)[]) {
        config[key] = parseLines(await readFile(join(current, FILES[key]), 'utf8'))
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    return { ...config, revision: blocklistRevision(config) }
  }

  /** Validate, and unless `dryRun` publish; the caller's revision must be current. */
  async put(
    input: BlocklistConfig,
    expected: string | undefined,
    dryRun: boolean,
  ): Promise<BlocklistConfig & { revision: string; changed: boolean }> {
    const next = normaliseConfig(input)
    return this.#lock.run('config', async () => {
      const current = await this.read()
      if (expected === undefined) throw errors.revision_required('changing the blocklist configuration')
      if (expected !== current.revision) throw errors.revision_mismatch(expected, current.revision)
      const revision = blocklistRevision(next)
      if (dryRun || revision === current.revision) return { ...next, revision, changed: false }
      await this.publish(next, revision)
      return { ...next, revision, changed: true }
    })
  }

  private async publish(config: BlocklistConfig, revision: string) {
    await mkdir(this.dir, { recursive: true })
    const generation = `gen-${Date.now()}-${revision.slice(0, 8)}`
    const genDir = join(this.dir, generation)
    await mkdir(genDir)
    for (const key of Object.keys(FILES) as (keyof typeof FILES)[]) {
      await writeSynced(join(genDir, FILES[key]), lines(config[key]))
    }
    await writeFile(join(genDir, 'revision'), `${revision}\n`)
    await fsyncDir(genDir)
    const previous = await readlink(join(this.dir, 'current')).catch(() => undefined)
    const tmpLink = join(this.dir, `current.tmp-${process.pid}`)
    await rm(tmpLink, { force: true })
    await symlink(generation, tmpLink)
    await rename(tmpLink, join(this.dir, 'current'))
    await fsyncDir(this.dir)
    // Keep the generation just replaced (a reader may still be in it); drop older ones.
    for (const name of await readdir(this.dir)) {
      if (name.startsWith('gen-') && name !== generation && name !== previous) {
        await rm(join(this.dir, name), { recursive: true, force: true })
      }
    }
  }
}
