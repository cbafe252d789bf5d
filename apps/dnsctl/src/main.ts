#!/usr/bin/env node
/** dnsctl: `serve` (the default) runs the API; the other commands are a CLI over it (see --help). */
import { runCli } from '@gatehouse/kit/cli/program.ts'
import { buildProgram } from './cli/program.ts'

process.exitCode = await runCli(buildProgram())
