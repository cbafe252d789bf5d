// The markdown subset Mattermost and Slack senders use in compatibility messages, rendered
// with DOM APIs only (never innerHTML): paragraphs and line breaks, # headings, > quotes,
// - / * / 1. lists, ``` code blocks ```, `code`, **bold**, *italic* / _italic_,
// ~~strike~~, [label](url), Slack's <url|label> and <url>, and bare http(s) URLs. Anything
// else, HTML included, stays literal text. Links are http(s) only and open in a new tab.

/** The URL when it is http(s), else undefined: nothing else becomes a link or an image. */
export function safeHref(url) {
  try {
    const u = new URL(url)
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : undefined
  } catch {
    return undefined
  }
}

function el(tag, attrs, children) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs ?? {})) e.setAttribute(k, v)
  e.append(...children)
  return e
}

function anchor(label, url) {
  const href = safeHref(url)
  if (!href) return document.createTextNode(label)
  return el('a', { href, target: '_blank', rel: 'noopener noreferrer' }, [label])
}

// One alternation per inline form; the first match in the text wins, then the rest is scanned.
const INLINE =
  /`([^`\n]+)`|\*\*([^*\n]+)\*\*|~~([^~\n]+)~~|\*([^*\n]+)\*|(?<![\w])_([^_\n]+)_(?![\w])|\[([^\]\n]+)\]\(((?:[^()\s]|\([^()\s]*\))+)\)|<(https?:\/\/[^|>\s]+)(?:\|([^>\n]+))?>|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/

/** Inline markdown of one line (or line run) to nodes. */
export function inline(text) {
  const out = []
  let rest = text
  while (rest) {
    const m = INLINE.exec(rest)
    if (!m) {
      out.push(document.createTextNode(rest))
      break
    }
    if (m.index > 0) out.push(document.createTextNode(rest.slice(0, m.index)))
    const [all, code, bold, strike, em1, em2, label, url, slackUrl, slackLabel, bare] = m
    if (code !== undefined) out.push(el('code', {}, [code]))
    else if (bold !== undefined) out.push(el('strong', {}, inline(bold)))
    else if (strike !== undefined) out.push(el('del', {}, inline(strike)))
    else if (em1 !== undefined || em2 !== undefined) out.push(el('em', {}, inline(em1 ?? em2)))
    else if (label !== undefined) out.push(anchor(label, url))
    else if (slackUrl !== undefined) out.push(anchor(slackLabel ?? slackUrl, slackUrl))
    else out.push(anchor(bare, bare))
    rest = rest.slice(m.index + all.length)
  }
  return out
}

/** One line of markdown as plain text (a card header): the markers go, link labels stay. */
export function plainText(line) {
  return inline(line)
    .map((n) => n.textContent)
    .join('')
}

function withBreaks(lines) {
  const nodes = []
  lines.forEach((line, i) => {
    if (i > 0) nodes.push(document.createElement('br'))
    nodes.push(...inline(line))
  })
  return nodes
}

/** Block markdown to a list of elements (for a message body or attachment text). */
export function markdown(text) {
  const lines = String(text ?? '').split(/\r?\n/)
  const blocks = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i]
    if (/^```/.test(line)) {
      const code = []
      i++
      while (i < lines.length && !/^```/.test(lines[i])) code.push(lines[i++])
      i++
      blocks.push(el('pre', {}, [el('code', {}, [code.join('\n')])]))
    } else if (/^#{1,6}\s/.test(line)) {
      blocks.push(el('p', { class: 'md-heading' }, [el('strong', {}, inline(line.replace(/^#+\s+/, '')))]))
      i++
    } else if (/^>\s?/.test(line)) {
      const quote = []
      while (i < lines.length && /^>\s?/.test(lines[i])) quote.push(lines[i++].replace(/^>\s?/, ''))
      blocks.push(el('blockquote', {}, withBreaks(quote)))
    } else if (/^\s*([-*•]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d/.test(line)
      const items = []
      while (i < lines.length && /^\s*([-*•]|\d+[.)])\s+/.test(lines[i]))
        items.push(el('li', {}, inline(lines[i++].replace(/^\s*([-*•]|\d+[.)])\s+/, ''))))
      blocks.push(el(ordered ? 'ol' : 'ul', {}, items))
    } else if (line.trim() === '') {
      i++
    } else {
      const para = []
      while (i < lines.length && lines[i].trim() !== '' && !/^(```|#{1,6}\s|>\s?|\s*([-*•]|\d+[.)])\s+)/.test(lines[i]))
        para.push(lines[i++])
      blocks.push(el('p', { class: 'body' }, withBreaks(para)))
    }
  }
  return blocks
}
