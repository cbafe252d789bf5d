#!/usr/bin/env node
/** artsvc: `serve` (the default) runs the server; publish, mcp-bridge and the management commands (see --help). */
import { prepareStartup } from '@gatehouse/kit/cli/startup.ts'

// Before the program's modules load (a static import would load them first).
prepareStartup()
const { run } = await import('./cli/program.ts')
process.exitCode = await run()
