/**
 * `edgegate enforcement status|disable|enable` (the kill switch, the same function and audit as
 * the dashboard's and the API's) and `edgegate pair list|add|remove` (node pairings for the web
 * candidate report), on the database `serve` uses.
 */
import { userInfo } from 'node:os'
import { paint, printList } from '@gatehouse/kit/cli/output.ts'
import { invokedAs, typedCommands } from '@gatehouse/kit/cli/program.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { setKillSwitch } from '../enforcement/service.ts'
import { automatedBlockCounts, readState } from '../enforcement/store.ts'
import { formatMillis } from '../timestamps.ts'
import { addPair, listPairs, removePair } from '../web/pair-store.ts'
import { readDatabase, withDatabase } from './database.ts'

type Opts = Record<string, unknown>

const actor = () => `cli:${userInfo().username}`
const out = (text: string) => void process.stdout.write(text)
const esc = (s: string) => escapeTerminal(s)

/** The shared enforcement state: kill switch and the automated blocks gates hold now. */
async function readEnforcement(o: Opts) {
  return readDatabase(o, async (d) => {
    const state = await readState(d.db)
    const byGate = await automatedBlockCounts(d.db)
    return {
      kill_switch: {
        engaged: state.killSwitch,
        actor: state.actor === '' ? null : state.actor,
        updated_at: state.updatedMs === 0 ? null : formatMillis(state.updatedMs),
      },
      automated_blocks: [...byGate.values()].reduce((a, b) => a + b, 0),
      automated_blocks_by_gate: Object.fromEntries(byGate),
    }
  })
}

export async function enforcementStatus(o: Opts): Promise<void> {
  const s = await readEnforcement(o)
  if (o.json === true) return out(`${terminalJson(s, 2)}\n`)
  const by = s.kill_switch.actor ? ` by ${esc(s.kill_switch.actor)} at ${s.kill_switch.updated_at}` : ''
  out(
    [
      s.kill_switch.engaged
        ? `kill switch: ${paint('red', 'engaged')}${by}: no automated blocks in any process (${typedCommands('edgegate enforcement enable', 'edgegate')} releases it)`
        : `kill switch: ${paint('green', 'released')}${by}: each serve process follows its --web-enforcement-mode`,
      `automated blocks in force: ${s.automated_blocks}${
        s.automated_blocks > 0
          ? ` (${Object.entries(s.automated_blocks_by_gate)
              .map(([g, n]) => `${esc(g)} ${n}`)
              .join(', ')})`
          : ''
      }`,
      '',
    ].join('\n'),
  )
}

/** Engage (`disable`) or release (`enable`) the kill switch; audited like the runtime switch. */
export async function enforcementSwitch(o: Opts, engaged: boolean): Promise<void> {
  const { revoked } = await withDatabase(o, (d) => setKillSwitch(d.db, d.kind, engaged, actor()))
  const s = await readEnforcement(o)
  if (o.json === true) return out(`${terminalJson({ ...s, revoked }, 2)}\n`)
  out(
    engaged
      ? `web enforcement disabled (kill switch engaged): ${revoked} automated block(s) revoked; gates drop them on their next pull\n`
      : 'web enforcement enabled again (kill switch released): each serve process follows its --web-enforcement-mode\n',
  )
}

export async function pairList(o: Opts): Promise<void> {
  const pairs = await readDatabase(o, (d) => listPairs(d.db))
  printList(
    pairs,
    [
      { header: 'WEBSIGNAL', value: (p) => p.websignal_id },
      { header: 'TLSGATE', value: (p) => p.tlsgate_id },
      { header: 'BY', value: (p) => p.actor },
      { header: 'SINCE', value: (p) => p.created_at },
    ],
    {
      json: o.json === true,
      empty: `no pairs: web signals match TLS gates' sightings by host name (SNI) only; ${invokedAs('edgegate')} pair add WEBSIGNAL_ID TLSGATE_ID matches a gate's sightings whatever the SNI`,
    },
  )
}

export async function pairAdd(o: Opts, websignalId: string, tlsgateId: string): Promise<void> {
  const added = await withDatabase(o, (d) => addPair(d.db, d.kind, websignalId, tlsgateId, actor()))
  const what = `${esc(websignalId)} paired with ${esc(tlsgateId)}`
  if (o.json === true) return out(`${terminalJson({ websignal_id: websignalId, tlsgate_id: tlsgateId, added }, 2)}\n`)
  out(added ? `${what}: its signals now also match that gate's sightings whatever the SNI\n` : `${what} already\n`)
}

export async function pairRemove(o: Opts, websignalId: string, tlsgateId: string): Promise<void> {
  await withDatabase(o, (d) => removePair(d.db, d.kind, websignalId, tlsgateId, actor()))
  if (o.json === true)
    return out(`${terminalJson({ websignal_id: websignalId, tlsgate_id: tlsgateId, removed: true }, 2)}\n`)
  out(`${esc(websignalId)} no longer paired with ${esc(tlsgateId)}\n`)
}
