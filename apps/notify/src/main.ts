#!/usr/bin/env node
/** notify: `serve` (the default) runs the service; `token` and `migrate` administer it (see --help). */
import { run } from './cli/program.ts'

process.exitCode = await run()
