#!/usr/bin/env node
/** artsvc: `serve` (the default) runs the server; publish, mcp-bridge and the management commands (see --help). */
import { startCompileCache } from '@gatehouse/kit/cli/compile-cache.ts'

// Before the program's modules load (a static import would compile them first).
startCompileCache()
const { run } = await import('./cli/program.ts')
process.exitCode = await run()
