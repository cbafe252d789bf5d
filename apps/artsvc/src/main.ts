#!/usr/bin/env node
/** artsvc: `serve` (the default) runs the server; publish, mcp-bridge and the management commands (see --help). */
import { run } from './cli/program.ts'

process.exitCode = await run()
