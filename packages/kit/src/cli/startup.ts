/**
 * What every binary's entry file does before it loads its program: Node's module compile cache
 * (compile-cache.ts), the single-file dependency bundles (module-bundles.ts) and commander's
 * `child_process` on demand (lazy-builtins.ts). Call it first, then load the program with
 * `import()`: a file's static imports are loaded before its code runs.
 */
import { startCompileCache } from './compile-cache.ts'
import { deferCommanderChildProcess } from './lazy-builtins.ts'
import { useModuleBundles } from './module-bundles.ts'

export function prepareStartup(env: NodeJS.ProcessEnv = process.env): void {
  startCompileCache(env)
  useModuleBundles(undefined, env)
  deferCommanderChildProcess()
}
