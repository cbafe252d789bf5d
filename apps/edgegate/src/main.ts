#!/usr/bin/env node
/** edgegate: `serve` runs the control plane; the other commands administer it (see --help). */
import { prepareStartup } from '@gatehouse/kit/cli/startup.ts'

// Before the program's modules load (a static import would load them first).
prepareStartup()
const { runCli } = await import('@gatehouse/kit/cli/program.ts')
const { buildProgram, exitCodeFor } = await import('./cli/program.ts')
process.exitCode = await runCli(buildProgram(), process.argv.slice(2), { exitCodeFor })
