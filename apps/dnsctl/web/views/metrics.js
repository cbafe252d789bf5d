// Metrics history: the spec's four fixed series for a named range, one SVG line chart each, drawn
// with DOM APIs (no chart library, nothing inline for the CSP). Gaps in the samples stay gaps.
import { api, count, errorBox, h, s } from '../lib.js'

const RANGES = ['1h', '6h', '24h', '7d']
const SERIES = [
  { key: 'query_rate', title: 'Query rate', unit: '/s', format: (v) => v.toFixed(v < 10 ? 2 : 0) },
  { key: 'cache_hit_ratio', title: 'Cache-hit ratio', unit: '%', format: (v) => (100 * v).toFixed(1), max: 1 },
  { key: 'nxdomain_rate', title: 'NXDOMAIN rate', unit: '/s', format: (v) => v.toFixed(v < 10 ? 2 : 0) },
  { key: 'cache_entries', title: 'Cache entries', unit: '', format: (v) => Math.round(v).toLocaleString() },
]
const W = 600
const H = 160
const PAD = { left: 8, right: 8, top: 12, bottom: 22 }

function timeLabel(iso, range) {
  const d = new Date(iso)
  return range === '7d' ? d.toISOString().slice(5, 10) : d.toISOString().slice(11, 16)
}

export function chart(series, data) {
  const from = Date.parse(data.from)
  const to = Date.parse(data.to)
  const values = data.points.map((p) => p[series.key]).filter((v) => v !== null)
  const max = series.max ?? (Math.max(...values, 0) * 1.1 || 1)
  const x = (t) => PAD.left + ((t - from) / (to - from)) * (W - PAD.left - PAD.right)
  const y = (v) => H - PAD.bottom - (v / max) * (H - PAD.top - PAD.bottom)
  // One polyline per run of samples. Points are as far apart as the sampler's interval (when it
  // is longer than the step, most steps have no point, and that is not missing data) rounded up
  // to whole steps, and one step more where a tick landed past a bucket boundary. A single
  // further missing step is bridged too: the newest bucket is still filling and the sampler's
  // ticks need not land in every bucket (a tick delayed past a boundary left the latest point as
  // a lone dot beside the line). A longer hole (a sample really missing), or a null value, breaks
  // the line: gaps in the samples stay gaps.
  const step = data.step_seconds * 1000
  const expected = Math.ceil((data.sample_seconds ?? data.step_seconds) / data.step_seconds) * step
  const maxGap = Math.max(expected, step) + step * 1.5
  const runs = []
  let run = []
  let prev
  for (const p of data.points) {
    const t = Date.parse(p.time)
    const v = p[series.key]
    if (v === null || (prev !== undefined && t - prev > maxGap)) {
      if (run.length) runs.push(run)
      run = []
    }
    if (v !== null) run.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`)
    prev = t
  }
  if (run.length) runs.push(run)
  // A zero-length path with a round cap: a round dot whatever the chart's aspect ratio (a circle
  // is stretched with preserveAspectRatio none).
  const dot = (xy, cls) => s('path', { d: `M${xy}h0`, class: cls })
  const last = values.at(-1)
  const label = `${series.title}: ${last === undefined ? 'no samples' : `latest ${series.format(last)}${series.unit}`}, ${data.range}`
  const svg = s(
    'svg',
    { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'chart', preserveAspectRatio: 'none' },
    s('line', { x1: PAD.left, x2: W - PAD.right, y1: H - PAD.bottom, y2: H - PAD.bottom, class: 'axis' }),
    s('line', { x1: PAD.left, x2: W - PAD.right, y1: PAD.top, y2: PAD.top, class: 'grid' }),
    ...runs.map((r) => (r.length === 1 ? dot(r[0], 'dot') : s('polyline', { points: r.join(' '), class: 'line' }))),
    // The latest value marked where its line ends.
    runs.length ? dot(runs.at(-1).at(-1), 'latest') : null,
  )
  return h(
    'figure',
    { class: 'card chart-card' },
    h(
      'figcaption',
      {},
      h('strong', {}, series.title),
      ' ',
      h('span', { class: 'muted' }, last === undefined ? 'no samples' : `latest ${series.format(last)}${series.unit}`),
    ),
    h('div', { class: 'chart-wrap' }, h('span', { class: 'ymax' }, `${series.format(max)}${series.unit}`), svg),
    h(
      'div',
      { class: 'xaxis muted' },
      h('span', {}, timeLabel(data.from, data.range)),
      h('span', {}, timeLabel(data.to, data.range)),
    ),
  )
}

export async function render(container) {
  const errors = errorBox()
  const charts = h('div', { class: 'charts' })
  const buttons = RANGES.map((r) => h('button', { type: 'button', 'data-range': r, onclick: () => show(r) }, r))
  const summary = h('p', { class: 'muted' })
  container.append(
    h('h1', {}, 'Metrics history'),
    h('div', { class: 'segmented', role: 'group', 'aria-label': 'Range' }, buttons),
    summary,
    errors,
    charts,
  )
  async function show(range) {
    for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.range === range))
    errors.clear()
    try {
      const { body } = await api('GET', `/v1/metrics/history?range=${range}`)
      // A sampler slower than the step explains why the points are further apart than that.
      const sampled =
        body.sample_seconds > body.step_seconds
          ? `, sampled every ${body.sample_seconds % 60 ? `${body.sample_seconds} s` : `${body.sample_seconds / 60} min`}`
          : ''
      summary.textContent = `${count(body.points.length, 'point')} of ${body.step_seconds / 60} min from the resolvers' counters${sampled}`
      charts.replaceChildren(...SERIES.map((series) => chart(series, body)))
    } catch (err) {
      errors.show(err)
    }
  }
  await show('1h')
}
