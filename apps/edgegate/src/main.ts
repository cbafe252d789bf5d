#!/usr/bin/env node
/** edgegate: `serve` runs the control plane; the other commands administer it (see --help). */
import { runCli } from '@gatehouse/kit/cli/program.ts'
import { buildProgram } from './cli/program.ts'

process.exitCode = await runCli(buildProgram())
