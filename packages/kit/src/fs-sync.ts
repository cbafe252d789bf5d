/**
 * `node:fs`'s synchronous calls for the modules every command loads at start-up (the entry's
 * compile cache, config, version, module bundles). They take `fs` from
 * `process.getBuiltinModule`, not from an `import … from 'node:fs'`: Node builds a builtin's
 * ES module facade on its first ESM import and reads every export to fill it, and `fs`'s
 * `ReadStream` getter then loads Node's whole stream stack. That was 5–9 ms of each app's
 * `--help` (about a sixth of it, #22); `test/binaries.test.ts` keeps the help path free of it.
 */
const fs = process.getBuiltinModule('node:fs')

export const { existsSync, mkdirSync, readFileSync } = fs
