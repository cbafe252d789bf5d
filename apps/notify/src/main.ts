#!/usr/bin/env node
/** notify: `serve` (the default) runs the service; `token` and `migrate` administer it (see --help). */
import { startCompileCache } from '@gatehouse/kit/cli/compile-cache.ts'

// Before the program's modules load (a static import would compile them first).
startCompileCache()
const { run } = await import('./cli/program.ts')
process.exitCode = await run()
