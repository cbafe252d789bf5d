/**
 * Node builtins for the modules every command loads at start-up (the entry's compile cache,
 * config, version, module bundles, the database opening, the CLI's output). They come from
 * `process.getBuiltinModule`, not from `import … from 'node:…'`: Node builds a builtin's ES
 * module facade on its first ESM import and reads every export to fill it, and the getters
 * load what the command never uses. `fs`'s `ReadStream` loads the stream classes, `util`'s
 * load `worker_threads` and more: 4–9 ms of a 60 ms `--help` or a 70 ms list (#22).
 * `fs.promises` and `util` are only reached when called, so that `--help` loads neither.
 * `test/binaries.test.ts` keeps `--help` and a list free of the costly ones.
 */
type Util = typeof import('node:util')

export const fs = process.getBuiltinModule('node:fs')
export const { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, statSync } = fs

let util: Util | undefined
export function styleText(
  format: Parameters<Util['styleText']>[0],
  text: string,
  options?: Parameters<Util['styleText']>[2],
) {
  util ??= process.getBuiltinModule('node:util')
  return util.styleText(format, text, options)
}
