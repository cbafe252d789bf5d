/**
 * Node's module compile cache for the Gatehouse binaries: the code V8 compiled for each module
 * (with TypeScript's types already stripped) is kept on disk and reused by the next run, which
 * more than halves the start-up of `--help` and of a list command.
 *
 * Call `startCompileCache()` first thing in an entry file and load the program with `import()`
 * after it: the modules of a file's static imports are compiled before its code runs.
 *
 * The cache lives in the user's own cache folder (`$XDG_CACHE_HOME/gatehouse/node-compile-cache`,
 * default `~/.cache/...`, created owner-only), never in a shared /tmp where another user could
 * plant compiled code. `NODE_COMPILE_CACHE` names another folder; `NODE_DISABLE_COMPILE_CACHE=1`
 * turns it off. It is only a speed-up: a folder that cannot be created is silently skipped.
 */
import { constants, enableCompileCache } from 'node:module'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { mkdirSync } from '../startup-builtins.ts'

/** The folder the cache uses for this user, or undefined when there is no home to put it in. */
export function compileCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.NODE_COMPILE_CACHE) return env.NODE_COMPILE_CACHE
  let base = env.XDG_CACHE_HOME
  if (!base) {
    try {
      base = join(env.HOME || homedir(), '.cache')
    } catch {
      return undefined
    }
  }
  return join(base, 'gatehouse', 'node-compile-cache')
}

/** Turn the compile cache on; returns whether it is on (already on counts). */
export function startCompileCache(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NODE_DISABLE_COMPILE_CACHE) return false
  const dir = compileCacheDir(env)
  if (!dir) return false
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const { status } = enableCompileCache(dir)
    return status === constants.compileCacheStatus.ENABLED || status === constants.compileCacheStatus.ALREADY_ENABLED
  } catch {
    return false
  }
}
