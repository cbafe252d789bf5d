/**
 * Drives knotd through `knotc` on its control socket: synchronous reloads (`-b`) and
 * runtime zone configuration in conf transactions (conf-begin / conf-set / conf-commit).
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'

export interface KnotcOptions {
  knotc: string
  socket: string
  zonesDir: string
  /** Longest knotc run in ms. */
  timeoutMs: number
}

export class KnotError extends Error {
  override readonly name = 'KnotError'
}

export class Knotc {
  readonly options: KnotcOptions
  constructor(options: KnotcOptions) {
    this.options = options
  }

  /** Path of a zone's file in Knot's storage (template `file: "%s.zone"`). */
  zoneFile(zone: string): string {
    return join(this.options.zonesDir, `${zone.replace(/\.$/, '')}.zone`)
  }

  /** Run knotc; resolves with stdout, rejects with a KnotError holding knotc's message. */
  run(...args: string[]): Promise<string> {
    const timeoutSeconds = Math.max(1, Math.ceil(this.options.timeoutMs / 1000))
    return new Promise((resolve, reject) => {
      execFile(
        this.options.knotc,
        ['-s', this.options.socket, '-t', String(timeoutSeconds), ...args],
        { timeout: this.options.timeoutMs + 1000, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (err) {
            const text = (stderr || stdout || err.message).trim().split('\n')[0] ?? 'knotc failed'
            reject(new KnotError(`knotc ${args.join(' ')}: ${text}`, { cause: err }))
          } else resolve(stdout)
        },
      )
    })
  }

  /** Whether knotd answers on its control socket. */
  async ping(): Promise<void> {
    await this.run('status')
  }

  /** Reload one zone from its file and wait for the result (`-b`); rejects when Knot refuses the file. */
  async reload(zone: string): Promise<void> {
    await this.run('-b', 'zone-reload', zone)
  }

  /** Zones in knotd's running configuration (absolute names). */
  async zones(): Promise<string[]> {
    const out = await this.run('conf-read', 'zone.domain')
    return out
      .split('\n')
      .map((l) => /^zone\.domain = (.+)$/.exec(l.trim())?.[1])
      .filter((z): z is string => z !== undefined)
      .map((z) => z.toLowerCase())
  }

  /** Add zones to the running configuration in one transaction. */
  addZone(zone: string): Promise<void> {
    return this.transaction([['conf-set', `zone[${zone}]`]])
  }

  /** Lines of `conf-read ITEM` (e.g. `zone`, `acl`, `template[default]`), empty when the section is unset. */
  async confRead(item: string): Promise<string[]> {
    try {
      return (await this.run('conf-read', item)).split('\n').filter((l) => l.trim() !== '')
    } catch (err) {
      if (/not exists|no such|invalid identifier|not found/i.test((err as Error).message)) return []
      throw err
    }
  }

  /** Write the zone as knotd holds it (a transferred zone too) to `<outdir>/<zone>.zone`. */
  async flush(zone: string, outdir: string): Promise<void> {
    await this.run('-b', 'zone-flush', zone, '+outdir', outdir)
  }

  removeZone(zone: string): Promise<void> {
    return this.transaction([['conf-unset', `zone[${zone}]`]])
  }

  /** Apply configuration steps (knotc argument lists) in one conf transaction; aborted on the first failure. */
  async transaction(steps: string[][]): Promise<void> {
    await this.run('conf-begin')
    try {
      for (const step of steps) await this.run(...step)
      await this.run('conf-commit')
    } catch (err) {
      await this.run('conf-abort').catch(() => {})
      throw err
    }
  }
}
