#!/usr/bin/env node
/** dnsctl: `serve` (the default) runs the API; the other commands are a CLI over it (see --help). */
import { startCompileCache } from '@gatehouse/kit/cli/compile-cache.ts'

// Before the program's modules load (a static import would compile them first).
startCompileCache()
const { runCli } = await import('@gatehouse/kit/cli/program.ts')
const { buildProgram } = await import('./cli/program.ts')
process.exitCode = await runCli(buildProgram())
