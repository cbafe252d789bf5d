/**
 * What CLIs print: tables with headers for people, JSON for scripts, colour only on a terminal
 * (`NO_COLOR` and `FORCE_COLOR` respected, through `node:util` `styleText`), and user-controlled
 * text escaped so it cannot drive the terminal.
 */
import { styleText } from '../startup-builtins.ts'
import { escapeTerminal, terminalJson } from '../terminal.ts'

type Style = Parameters<typeof styleText>[0]

/**
 * `text` styled when `stream` is a terminal that wants colour, plain otherwise.
 *
 * @example paint('red', 'blocked') // '\x1b[31mblocked\x1b[39m' on a TTY, 'blocked' in a pipe
 */
export function paint(style: Style, text: string, stream: NodeJS.WriteStream = process.stdout): string {
  return styleText(style, text, { stream, validateStream: true })
}

export interface Column<Row> {
  header: string
  value(row: Row): string | number | boolean | null | undefined
  /** Colour of the cell on a terminal, decided from the row. */
  style?(row: Row): Style | undefined
}

/**
 * Rows as an aligned table with a header line. Cells are escaped for the terminal; empty
 * values print as `-`. Without rows the header alone is printed, so an empty list is visible.
 */
export function formatTable<Row>(
  columns: Column<Row>[],
  rows: Row[],
  stream: NodeJS.WriteStream = process.stdout,
): string {
  const cells = rows.map((r) =>
    columns.map((c) => {
      const v = c.value(r)
      return v === null || v === undefined || v === '' ? '-' : escapeTerminal(String(v))
    }),
  )
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)))
  const line = (values: string[], styles: (Style | undefined)[]) =>
    values
      .map((v, i) => {
        const padded = i === values.length - 1 ? v : v.padEnd(widths[i]!)
        const s = styles[i]
        return s ? paint(s, padded, stream) : padded
      })
      .join('  ')
      .trimEnd()
  const header = line(
    columns.map((c) => c.header),
    columns.map(() => 'bold'),
  )
  return (
    [
      header,
      ...cells.map((row, j) =>
        line(
          row,
          columns.map((c) => c.style?.(rows[j]!)),
        ),
      ),
    ].join('\n') + '\n'
  )
}

/**
 * Print a list the way every `list` command does: JSON (an array, stable for scripts) with
 * `json`, a table otherwise. `empty` is what a person reads instead of a bare header when there
 * are no rows (`no decisions yet: ...`, as `cscli decisions list` says so); JSON stays `[]`.
 */
export function printList<Row>(
  rows: Row[],
  columns: Column<Row>[],
  options: { json?: boolean; toJson?: (row: Row) => unknown; out?: (text: string) => void; empty?: string } = {},
): void {
  const out = options.out ?? ((t: string) => void process.stdout.write(t))
  if (options.json) out(`${terminalJson(options.toJson ? rows.map(options.toJson) : rows, 2)}\n`)
  else if (rows.length === 0 && options.empty !== undefined) out(`${escapeTerminal(options.empty)}\n`)
  else out(formatTable(columns, rows))
}
