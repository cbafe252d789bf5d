// Card actions and slash commands in the notify web client (issue #21). Loaded by app.js,
// which hands over its DOM helpers (`ui`: h, api, toast). Every text from the server is
// set as text; a click keeps its Idempotency-Key until it has an outcome, so a retried
// click never calls the target twice.

/**
 * Earlier invocations of a card's actions, by notification id: fetched once per card when it
 * is first drawn (a card without registered actions never asks), and added to by this page's
 * own clicks, so a redraw shows the last outcome at once.
 */
const earlier = new Map()

function invocationsOf(ui, n) {
  let list = earlier.get(n.id)
  if (!list) {
    list = ui
      .api('GET', `/api/v1/notifications/${n.id}/actions`)
      .then((r) => r.invocations)
      .catch(() => [])
    earlier.set(n.id, list)
  }
  return list
}

function remember(n, invocation) {
  const list = earlier.get(n.id) ?? Promise.resolve([])
  earlier.set(
    n.id,
    list.then((all) => [...all.filter((i) => i.id !== invocation.id), invocation]),
  )
}

/** Every invocation of the card's actions, oldest first (for its activity history). */
export function actionHistory(ui, n) {
  return n.content?.actions?.some((a) => a.type !== 'link') ? invocationsOf(ui, n) : Promise.resolve([])
}

/** One line of an invocation: who ran which action and how it ended. */
export function invocationText(n, inv) {
  const label = n.content?.actions?.[inv.action_index]?.label ?? `action ${inv.action_index + 1}`
  const how =
    inv.outcome === 'success'
      ? `succeeded${inv.status_code ? ` (${inv.status_code})` : ''}`
      : inv.outcome === 'failure'
        ? `failed: ${inv.error ?? 'unknown error'}`
        : 'is running'
  return `${inv.username} ran “${label}”: ${how} `
}

/** One registered action of a card: a live button with its last outcome beside it. */
export function actionButton(ui, n, action, index, canOperate) {
  const { h, api } = ui
  const outcome = h('span', { class: 'outcome', role: 'status' })
  let clicked = false
  if (n.content?.actions) {
    invocationsOf(ui, n).then((all) => {
      const last = all.filter((i) => i.action_index === index && i.outcome !== 'pending').at(-1)
      if (last && !clicked) showOutcome(outcome, last, true)
    })
  }
  if (!canOperate) {
    return h(
      'span',
      { class: 'action' },
      h('button', { disabled: true, title: 'Needs the operator role on this channel' }, action.label),
      ' ',
      outcome,
    )
  }
  let key
  const button = h(
    'button',
    {
      class: 'action-button',
      onclick: async () => {
        key ??= crypto.randomUUID()
        clicked = true
        button.disabled = true
        outcome.className = 'outcome'
        outcome.textContent = 'Running…'
        try {
          const { invocation } = await api('POST', `/api/v1/notifications/${n.id}/actions/${index}`, undefined, {
            'idempotency-key': key,
          })
          showOutcome(outcome, invocation, false)
          remember(n, invocation)
          key = undefined
        } catch (err) {
          outcome.className = 'outcome failure'
          outcome.textContent = err.message
          // A network error keeps the key: the next click asks for the same outcome.
          if (err.status) key = undefined
        } finally {
          button.disabled = false
        }
      },
    },
    action.label,
  )
  return h('span', { class: 'action' }, button, ' ', outcome)
}

/** The outcome beside a button; an earlier one (from the server) names who ran it and when. */
function showOutcome(el, invocation, earlierRun) {
  const ok = invocation.outcome === 'success'
  el.className = `outcome ${ok ? 'success' : 'failure'}${earlierRun ? ' earlier' : ''}`
  const text = ok
    ? `✓ Done${invocation.status_code ? ` (${invocation.status_code})` : ''}`
    : `✗ Failed: ${invocation.error ?? 'unknown error'}`
  el.textContent = earlierRun ? `Last run by ${invocation.username}: ${text}` : text
  el.title = invocation.finished_at ?? invocation.created_at ?? ''
}

let commands // cached list of {trigger, description}
let bar // { channel, el }: the bar survives re-renders (live updates) with what was typed

/** The slash-command bar of a channel (readers with operator rights). */
export function commandBar(ui, channel) {
  if (bar?.channel !== channel) bar = { channel, el: buildCommandBar(ui, channel) }
  return bar.el
}

function buildCommandBar(ui, channel) {
  const { h, api } = ui
  const reply = h('pre', { class: 'command-reply', role: 'status', hidden: true })
  const list = h('datalist', { id: 'slash-commands' })
  const input = h('input', {
    name: 'command',
    list: 'slash-commands',
    placeholder: '/command arguments',
    'aria-label': 'Slash command',
    autocomplete: 'off',
  })
  const fill = (cmds) =>
    list.replaceChildren(...cmds.map((c) => h('option', { value: `/${c.trigger} ` }, c.description || c.trigger)))
  if (commands) fill(commands)
  else
    api('GET', '/api/v1/slash-commands')
      .then((r) => {
        commands = r.commands
        fill(commands)
      })
      .catch(() => undefined)
  let key
  let last
  const form = h(
    'form',
    {
      class: 'command-bar',
      onsubmit: async (e) => {
        e.preventDefault()
        const m = /^\/?([a-z0-9][a-z0-9_-]{0,31})(?:\s+([\s\S]*))?$/.exec(input.value.trim())
        reply.hidden = false
        if (!m) {
          reply.className = 'command-reply failure'
          reply.textContent = 'Type /command followed by its arguments.'
          return
        }
        const body = { trigger: m[1], text: m[2] ?? '' }
        const same = JSON.stringify(body) === last
        if (!same) key = crypto.randomUUID()
        last = JSON.stringify(body)
        reply.className = 'command-reply'
        reply.textContent = 'Running…'
        try {
          const { invocation } = await api('POST', `/api/v1/channels/${encodeURIComponent(channel)}/commands`, body, {
            'idempotency-key': key,
          })
          const ok = invocation.outcome === 'success'
          reply.className = `command-reply ${ok ? 'success' : 'failure'}`
          reply.textContent = ok
            ? (invocation.response_text ?? `/${body.trigger} done`)
            : `/${body.trigger} failed: ${invocation.error}`
          last = undefined
        } catch (err) {
          reply.className = 'command-reply failure'
          reply.textContent = err.message
          if (err.status) last = undefined
        }
      },
    },
    input,
    list,
    h('button', { type: 'submit' }, 'Run'),
  )
  return h('div', { class: 'commands' }, form, reply)
}
