#!/usr/bin/env node
/** notify: `serve` (the default) runs the service; `token` and `migrate` administer it (see --help). */
import { prepareStartup } from '@gatehouse/kit/cli/startup.ts'

// Before the program's modules load (a static import would load them first).
prepareStartup()
const { run } = await import('./cli/program.ts')
process.exitCode = await run()
