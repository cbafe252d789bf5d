/**
 * The dnsctl command tree: `serve` (the default, so `dnsctl --listen ...` still runs the API)
 * and a CLI over the API. Actions import their module when they run: `--help` and the client
 * commands never load Fastify or the publication pipeline.
 */
import { type Command, createCli, withExamples } from '@gatehouse/kit/cli/program.ts'
import { addSchemaOptions, schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import { schema } from '../config.ts'

const collect = (v: string, prev: string[] | undefined) => [...(prev ?? []), v]

export function buildProgram(): Command {
  const program = createCli({
    name: 'dnsctl',
    description:
      'DNS management API driving a Knot DNS server, and a CLI over that API.\nServer flags and DNSCTL_* variables: dnsctl serve --help',
    packageJson: new URL('../../package.json', import.meta.url),
  })
    .option(
      '-c, --config <file>',
      'JSON config file (default $DNSCTL_CONFIG, else /etc/gatehouse/dnsctl.json when it exists)',
    )
    .option('--url <url>', "the API (default $DNSCTL_URL, else http:// + the config's listen, 127.0.0.1:8053)")
  withExamples(program, [
    'dnsctl serve --knot-socket /run/knot/knot.sock --knot-zones-dir /var/lib/knot',
    'dnsctl zone create example.com --ns ns1 --ns-address 192.0.2.1',
    'dnsctl rrset set example.com www A 192.0.2.10 192.0.2.11 --ttl 300',
    'dnsctl diff example.com example.com.zone',
    'dnsctl history example.com',
    'dnsctl console',
  ])
  const all = (cmd: Command) => cmd.optsWithGlobals()
  const zones = () => import('./zones.ts')
  const dryRun = (cmd: Command) => cmd.option('--dry-run', 'print the record-level difference and change nothing')
  const json = (cmd: Command) => cmd.option('--json', 'print JSON for scripts instead of a table')

  withExamples(
    addSchemaOptions(
      program.command('serve', { isDefault: true }).description('run the API (the default command)'),
      schema,
    ),
    ['dnsctl serve --listen 127.0.0.1:8053 --knot-socket /run/knot/knot.sock --knot-address 127.0.0.1:53'],
  ).action(async (_o, cmd: Command) => {
    const o = all(cmd)
    await (await import('./serve.ts')).serve(schemaFlags(o, schema), o.config as string | undefined)
  })

  const refresh = program
    .command('refresh')
    .description('run a refresh job now (blocklists, zones) and print what happened')
  for (const [job, about] of [
    ['blocklists', 'download the blocklist sources, compile the RPZ file, reload the resolvers one after the other'],
    ['zones', 'refresh the secondary zones from their primary and compare primary and secondary records'],
  ] as const) {
    withExamples(json(addSchemaOptions(refresh.command(job).description(about), schema)), [
      `dnsctl refresh ${job} --config /etc/gatehouse/dnsctl.json`,
    ]).action(async (_o, cmd: Command) => {
      const o = all(cmd)
      const { loadDnsctlConfig } = await import('../config.ts')
      const config = loadDnsctlConfig([], process.env, {
        flags: schemaFlags(o, schema),
        config: o.config as string | undefined,
      })
      const run = await import('../refresh-command.ts')
      process.exitCode =
        job === 'zones'
          ? await run.refreshZonesCommand(config, o.json === true)
          : await run.refreshBlocklistsCommand(config, o.json === true)
    })
  }

  withExamples(
    addSchemaOptions(
      program
        .command('backup')
        .description(
          'copy the database, the zone files and the blocklist configuration into a new folder, consistent while serve runs (same flags and config as serve)',
        )
        .argument('<dir>', 'the new folder (never an existing one)'),
      schema,
    ),
    ['dnsctl backup /var/backups/dnsctl-$(date +%F) --config /etc/gatehouse/dnsctl.json'],
  ).action(async (dir: string, _o, cmd: Command) => {
    const o = all(cmd)
    const { loadDnsctlConfig } = await import('../config.ts')
    const config = loadDnsctlConfig([], process.env, {
      flags: schemaFlags(o, schema),
      config: o.config as string | undefined,
    })
    process.stdout.write(`${await (await import('./backup.ts')).backup(config, dir)}\n`)
  })

  const zone = program.command('zone').description('list, create, export, import and delete zones')
  json(zone.command('list'))
    .description('zones dnsctl manages')
    .action(async (_o, cmd: Command) => (await zones()).zoneList(all(cmd)))
  withExamples(
    dryRun(zone.command('create'))
      .description('create a primary zone with an SOA and NS records (no zone text needed)')
      .argument('<zone>')
      .option('--ns <name>', 'name server (repeatable; relative names are inside the zone)', collect)
      .option('--ns-address <ip>', 'address of the in-zone name servers (glue; repeatable)', collect)
      .option('--email <address>', 'SOA contact (hostmaster@zone by default)')
      .option('--ttl <seconds>', 'default TTL ($TTL)', '3600')
      .option('--serial <n>', 'first SOA serial (default YYYYMMDD01)')
      .option('--refresh <seconds>', 'SOA refresh', '3600')
      .option('--retry <seconds>', 'SOA retry', '900')
      .option('--expire <seconds>', 'SOA expire', '604800')
      .option('--minimum <seconds>', 'SOA minimum (negative-answer TTL)', '300'),
    [
      'dnsctl zone create example.com --ns ns1 --ns-address 192.0.2.1',
      'dnsctl zone create example.org --ns ns1.example.net. --ns ns2.example.net.',
    ],
  ).action(async (name: string, _o, cmd: Command) => (await zones()).zoneCreate(all(cmd), name))
  withExamples(zone.command('export').description('write the canonical zone text to FILE (or stdout)'), [
    'dnsctl zone export example.com example.com.zone',
  ])
    .argument('<zone>')
    .argument('[file]', 'output file; - or absent for stdout')
    .action(async (name: string, file: string | undefined, _o, cmd: Command) =>
      (await zones()).zoneExport(all(cmd), name, file),
    )
  withExamples(
    dryRun(zone.command('import'))
      .description(
        'replace (or create) a zone from a zone file; the current revision is checked; a file with the records the zone has (whatever its serial) publishes nothing',
      )
      .argument('<zone>')
      .argument('<file>', 'zone file; - for stdin')
      .option('--role <role>', 'primary or secondary', 'primary'),
    ['dnsctl zone import example.com example.com.zone', 'dnsctl zone import --dry-run example.com example.com.zone'],
  ).action(async (name: string, file: string, _o, cmd: Command) => (await zones()).zoneImport(all(cmd), name, file))
  zone
    .command('delete')
    .description('stop serving a zone (its history is kept)')
    .argument('<zone>')
    .action(async (name: string, _o, cmd: Command) => (await zones()).zoneDelete(all(cmd), name))

  const rrset = program.command('rrset').description('list, set and delete RRsets')
  json(rrset.command('list'))
    .description("a zone's records")
    .argument('<zone>')
    .action(async (name: string, _o, cmd: Command) => (await zones()).rrsetList(all(cmd), name))
  withExamples(
    dryRun(rrset.command('set'))
      .description('replace an RRset (name and type) with these records')
      .argument('<zone>')
      .argument('<name>', 'relative to the zone; @ for the apex')
      .argument('<type>', 'A, AAAA, CNAME, MX, TXT, SRV, CAA or NS')
      .argument('<records...>', 'RDATA in zone-file presentation, one argument per record')
      .option('--ttl <seconds>', "TTL (default: the RRset's current TTL, else the SOA's)"),
    ['dnsctl rrset set example.com www A 192.0.2.10 192.0.2.11', 'dnsctl rrset set example.com @ MX "10 mail"'],
  ).action(async (z: string, name: string, type: string, records: string[], _o, cmd: Command) =>
    (await zones()).rrsetSet(all(cmd), z, name, type, records),
  )
  withExamples(
    dryRun(rrset.command('delete'))
      .description('remove an RRset')
      .argument('<zone>')
      .argument('<name>')
      .argument('<type>'),
    ['dnsctl rrset delete example.com old CNAME'],
  ).action(async (z: string, name: string, type: string, _o, cmd: Command) =>
    (await zones()).rrsetDelete(all(cmd), z, name, type),
  )

  withExamples(
    json(program.command('diff'))
      .description('what importing FILE would change, record by record (a dry run; nothing changes)')
      .argument('<zone>')
      .argument('<file>', 'zone file; - for stdin')
      .option('--role <role>', 'primary or secondary', 'primary'),
    ['dnsctl diff example.com example.com.zone'],
  ).action(async (name: string, file: string, _o, cmd: Command) => (await zones()).diff(all(cmd), name, file))

  withExamples(
    json(program.command('history'))
      .description("a zone's prior revisions, newest first (also after it was deleted)")
      .argument('<zone>')
      .option('--limit <n>', 'at most this many (1-1000)', '20'),
    ['dnsctl history example.com'],
  ).action(async (name: string, _o, cmd: Command) => (await zones()).history(all(cmd), name))
  withExamples(
    dryRun(program.command('rollback'))
      .description(
        'publish the content of a prior revision again (the serial still moves forward, unless the zone has that content already)',
      )
      .argument('<zone>')
      .argument('<revision>', 'a revision from dnsctl history, or its serial (the newest with it)'),
    ['dnsctl rollback example.com Hq3kB2c9x1n8v0m4s6d7f5g2h1j', 'dnsctl rollback example.com 2026112901 --dry-run'],
  ).action(async (name: string, revision: string, _o, cmd: Command) =>
    (await zones()).rollback(all(cmd), name, revision),
  )
  const haCli = () => import('./ha.ts')
  const ha = program.command('ha').description('HA roles: status of both peers, promotion of the secondary')
  withExamples(json(ha.command('status')).description('role, write mode, VIP, replication and the peer'), [
    'dnsctl ha status',
  ]).action(async (_o, cmd: Command) => (await haCli()).haStatus(all(cmd)))
  withExamples(
    json(ha.command('promote'))
      .description('make this secondary the primary (refused while the old primary answers and is writable)')
      .option('--reason <text>', 'recorded in the HA event'),
    ['dnsctl ha promote --reason "primary host lost"'],
  ).action(async (_o, cmd: Command) => (await haCli()).haPromote(all(cmd)))
  withExamples(
    json(ha.command('demote'))
      .description(
        'make this fenced former primary the secondary of the promoted peer (refused unless the peer is a writable primary)',
      )
      .option('--reason <text>', 'recorded in the HA event'),
    ['dnsctl ha demote --reason "rejoin after failover"'],
  ).action(async (_o, cmd: Command) => (await haCli()).haDemote(all(cmd)))
  withExamples(
    json(program.command('console'))
      .description('print a one-time sign-in link to the web console (needs --console-listen on the server)')
      .option('--name <name>', 'who signs in: audit events of console changes say console:<name> (default $USER)'),
    ['dnsctl console', 'dnsctl console --name alice'],
  ).action(async (_o, cmd: Command) => (await import('./console.ts')).consoleLink(all(cmd)))
  return program
}
