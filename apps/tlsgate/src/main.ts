#!/usr/bin/env node
/** Process entry: `tlsgate <command>`; see `tlsgate --help`. */
import { prepareStartup } from '@gatehouse/kit/cli/startup.ts'

// Before the program's modules load (a static import would load them first).
prepareStartup()
const { run } = await import('./cli/program.ts')
const code = await run(process.argv.slice(2))
// `serve` installs its own signal handling and keeps the process alive; others end here.
if (process.argv[2] !== 'serve' || code !== 0) process.exitCode = code
