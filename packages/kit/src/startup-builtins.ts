/**
 * Node builtins for the modules every command loads at start-up (the entry's compile cache,
 * config, version, module bundles, the database opening, the CLI's output). They come from
 * `process.getBuiltinModule`, not from `import … from 'node:…'`: Node builds a builtin's ES
 * module facade on its first ESM import and reads every export to fill it, and the getters
 * load what the command never uses. `fs`'s `ReadStream` loads the stream classes, `util`'s
 * load `worker_threads` and more: 4–9 ms of a 60 ms `--help` or a 70 ms list (#22).
 * `test/binaries.test.ts` keeps `--help` free of them.
 */
const fs = process.getBuiltinModule('node:fs')

export const { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync } = fs
export const { mkdir } = fs.promises
export const { styleText } = process.getBuiltinModule('node:util')
