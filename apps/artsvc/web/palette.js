// Theme colours as the server's theme stylesheet computes them (src/ui/theme.ts), for the theme
// editor's previews: the text colour on the primary colour, and a light theme's accent in the dark
// scheme. test/palette.test.ts checks that both agree with the server for any colour.

/** app.css's dark scheme: the page background, text and (lighter) panels. */
export const DARK_SURFACES = { background: '#14171d', text: '#e6e9ef', panel: '#21242a' }
const DARK_ACCENT_CONTRAST = 5

/** WCAG 2 relative luminance of `#rrggbb`. */
export function luminance(hex) {
  const channel = (i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/** Black or white text on `hex`, whichever contrasts more. */
export function onColor(hex) {
  return luminance(hex) > 0.179 ? '#000000' : '#ffffff'
}

/** A dark background takes white text: the theme is dark in both schemes. */
export function isDarkTheme(palette) {
  return onColor(palette.background) === '#ffffff'
}

/** The accent lightened (same hue and saturation) until it reads on the dark panels. */
export function darkAccent(hex) {
  const panel = luminance(DARK_SURFACES.panel)
  const readable = (c) => (luminance(c) + 0.05) / (panel + 0.05) >= DARK_ACCENT_CONTRAST
  if (readable(hex)) return hex
  const [h, s, l] = toHsl(hex)
  for (let step = Math.ceil(l * 200) + 1; step <= 200; step++) {
    const candidate = fromHsl(h, s, step / 200)
    if (readable(candidate)) return candidate
  }
  return '#ffffff'
}

function toHsl(hex) {
  const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16) / 255)
  const max = Math.max(r, g, b)
  const min = Math.min(r, g, b)
  const l = (max + min) / 2
  const d = max - min
  if (d === 0) return [0, 0, l]
  const s = d / (1 - Math.abs(2 * l - 1))
  const h = max === r ? ((g - b) / d + 6) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4
  return [h * 60, s, l]
}

function fromHsl(h, s, l) {
  const c = (1 - Math.abs(2 * l - 1)) * s
  const x = c * (1 - Math.abs(((h / 60) % 2) - 1))
  const m = l - c / 2
  const [r, g, b] = [
    [c, x, 0],
    [x, c, 0],
    [0, c, x],
    [0, x, c],
    [x, 0, c],
    [c, 0, x],
  ][Math.floor(h / 60) % 6]
  const byte = (v) =>
    Math.round((v + m) * 255)
      .toString(16)
      .padStart(2, '0')
  return `#${byte(r)}${byte(g)}${byte(b)}`
}
