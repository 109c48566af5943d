/** A piece of service text: its own words, or a value it quoted (attacker text). */
export interface TextPart {
  readonly quoted: boolean
  readonly text: string
}

/**
 * Splits a text the service wrote from its templates (titles, narratives, recommended actions, event summaries)
 * into its own words and the values it quotes. The templates show attacker text only as JSON string literals
 * (`quoteAttackerText`), whose inner quotes are escaped, so a literal is read from its opening quote to the first
 * unescaped one; an unterminated literal (a text cut mid-quote) is quoted to the end. Nothing outside a literal comes
 * from an attacker; every literal is treated as attacker text.
 */
export const splitServiceText = (text: string): ReadonlyArray<TextPart> => {
  const parts: Array<TextPart> = []
  let at = 0
  while (at < text.length) {
    const open = text.indexOf('"', at)
    if (open < 0) {
      parts.push({ quoted: false, text: text.slice(at) })
      break
    }
    if (open > at) parts.push({ quoted: false, text: text.slice(at, open) })
    let end = open + 1
    while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1
    if (end >= text.length) {
      parts.push({ quoted: true, text: text.slice(open + 1) })
      break
    }
    const literal = text.slice(open, end + 1)
    let inner: string
    try {
      inner = String(JSON.parse(literal))
    } catch {
      inner = literal.slice(1, -1)
    }
    parts.push({ quoted: true, text: inner })
    at = end + 1
  }
  return parts
}
