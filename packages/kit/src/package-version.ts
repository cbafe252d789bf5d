/** The released version number an app shows in `--version` and `/openapi.json`. */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readFileSync } from './startup-builtins.ts'

/**
 * The `version` of a package.json: given the file itself (a path or `file:` URL), or a folder,
 * the nearest package.json at or above it that has a version. Read synchronously (it is small).
 *
 * @example packageVersion(import.meta.dirname) // '0.1.0'
 * @example packageVersion(new URL('../package.json', import.meta.url)) // '0.1.0'
 */
export function packageVersion(from: URL | string): string {
  const start = typeof from === 'string' ? from : fileURLToPath(from)
  if (start.endsWith('package.json')) return versionOf(start) ?? '0.0.0'
  let dir = start
  for (;;) {
    const version = versionOf(join(dir, 'package.json'))
    if (version) return version
    const up = dirname(dir)
    if (up === dir) throw new TypeError(`no package.json with a version at or above ${start}`)
    dir = up
  }
}

function versionOf(file: string): string | undefined {
  try {
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }
    return typeof pkg.version === 'string' ? pkg.version : undefined
  } catch {
    return undefined
  }
}
