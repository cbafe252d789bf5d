#!/usr/bin/env node
/** edgegate: `serve` runs the control plane; the other commands administer it (see --help). */
import { startCompileCache } from '@gatehouse/kit/cli/compile-cache.ts'

// Before the program's modules load (a static import would compile them first).
startCompileCache()
const { runCli } = await import('@gatehouse/kit/cli/program.ts')
const { buildProgram } = await import('./cli/program.ts')
process.exitCode = await runCli(buildProgram())
