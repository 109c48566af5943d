const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

/**
 * An RFC 3339 timestamp with a zone (Z or an offset). Stored times have milliseconds, so a finer fraction rounds up:
 * `time >= from` and `time < to` then select exactly the events the caller's instant selects, and consecutive windows
 * neither overlap nor leave gaps.
 */
export const parseTimestamp = (text: string): Date | undefined => {
  const m = RFC3339.exec(text)
  if (!m) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ]
  const monthEnd = new Date(Date.UTC(2000, 0, 1))
  monthEnd.setUTCFullYear(year, month, 0)
  const daysInMonth = monthEnd.getUTCDate()
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59)
    return undefined
  let offsetMinutes = 0
  if (m[9] !== undefined) {
    const oh = Number(m[10])
    const om = Number(m[11])
    if (oh > 23 || om > 59) return undefined
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (oh * 60 + om)
  }
  const fraction = m[7] ? m[7].slice(1) : ""
  const nanos = Number(fraction.padEnd(9, "0"))
  const ms = Math.ceil(nanos / 1e6)
  // Date.UTC reads years 0–99 as 1900–1999; setUTCFullYear takes the year as written.
  const base = new Date(Date.UTC(2000, month - 1, day, hour, minute, second))
  base.setUTCFullYear(year, month - 1, day)
  const epoch = base.getTime() + ms - offsetMinutes * 60_000
  const date = new Date(epoch)
  return Number.isNaN(date.getTime()) ? undefined : date
}
