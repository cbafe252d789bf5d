#!/usr/bin/env node
/** Process entry: `tlsgate <command>`; see `tlsgate --help`. */
import { run } from './cli/program.ts'

const code = await run(process.argv.slice(2))
// `serve` installs its own signal handling and keeps the process alive; others end here.
if (process.argv[2] !== 'serve' || code !== 0) process.exitCode = code
