#!/usr/bin/env node
/** dnsctl: `serve` (the default) runs the API; the other commands are a CLI over it (see --help). */
import { prepareStartup } from '@gatehouse/kit/cli/startup.ts'

// Before the program's modules load (a static import would load them first).
prepareStartup()
const { runCli } = await import('@gatehouse/kit/cli/program.ts')
const { buildProgram } = await import('./cli/program.ts')
process.exitCode = await runCli(buildProgram())
