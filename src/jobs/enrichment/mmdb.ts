import { readFileSync, statSync } from "node:fs"
import { basename } from "node:path"
import { Reader } from "maxmind"
import { type GeoFacts, geoFactsOf, mergeGeoFacts, NO_GEO } from "../../domain/enrichment.ts"

/**
 * The operator's MMDB files (MMDB_ASN_FILE, MMDB_COUNTRY_FILE), read by MaxMind's reader (`maxmind`, over
 * `mmdb-lib`). Each file is read whole into memory when it is opened, and opened again when its size or modification
 * time changes (a monthly update replaces it): `source` then names other build times, and the job looks every recent
 * address up again. Either file may hold both facts (IPinfo's, DB-IP's combined files): the AS comes from the ASN file
 * first, the country from the country file first.
 */

interface OpenFile {
  readonly path: string
  readonly stamp: string
  readonly reader: Reader<Record<string, unknown>> | undefined
  /** What `source` says of this file: its name and build time, or that it could not be read. */
  readonly label: string
  readonly problem: string | undefined
}

const stampOf = (path: string): string => {
  try {
    const s = statSync(path)
    return `${s.size}:${s.mtimeMs}`
  } catch (error) {
    return `missing:${(error as NodeJS.ErrnoException).code ?? "error"}`
  }
}

const openFile = (path: string): OpenFile => {
  const stamp = stampOf(path)
  try {
    const reader = new Reader<Record<string, unknown>>(readFileSync(path))
    const built = reader.metadata.buildEpoch
    return {
      path,
      stamp,
      reader,
      label: `${basename(path)}@${Number.isNaN(built.getTime()) ? "unknown" : built.toISOString()}`,
      problem: undefined,
    }
  } catch (error) {
    return {
      path,
      stamp,
      reader: undefined,
      label: `${basename(path)}@unreadable`,
      problem: (error as NodeJS.ErrnoException).code ?? (error as Error).message,
    }
  }
}

export class GeoFiles {
  private asnFile: OpenFile | undefined
  private countryFile: OpenFile | undefined

  constructor(
    private readonly asnPath: string | undefined,
    private readonly countryPath: string | undefined,
  ) {}

  /** Whether any file is configured. */
  get configured(): boolean {
    return this.asnPath !== undefined || this.countryPath !== undefined
  }

  /**
   * Opens the files not open yet and those changed on disk; returns the files that could not be read (path and why),
   * newly, so each problem is logged once per change.
   */
  refresh(): ReadonlyArray<{ readonly path: string; readonly problem: string }> {
    const problems: Array<{ path: string; problem: string }> = []
    const reopen = (path: string | undefined, current: OpenFile | undefined): OpenFile | undefined => {
      if (path === undefined) return undefined
      if (current !== undefined && current.stamp === stampOf(path)) return current
      const opened = openFile(path)
      if (opened.problem !== undefined) problems.push({ path, problem: opened.problem })
      return opened
    }
    this.asnFile = reopen(this.asnPath, this.asnFile)
    this.countryFile = reopen(this.countryPath, this.countryFile)
    return problems
  }

  /** What the facts of an address are "as of": the files' names and build times; null when none is configured. */
  get source(): string | null {
    if (!this.configured) return null
    return [this.asnFile?.label ?? "-", this.countryFile?.label ?? "-"].join(" ")
  }

  /** The facts of one address in the open files (none for an address they do not cover). */
  lookUp(address: string): GeoFacts {
    const read = (file: OpenFile | undefined): GeoFacts => {
      if (file?.reader === undefined) return NO_GEO
      try {
        return geoFactsOf(file.reader.get(address))
      } catch {
        // An address the file cannot hold (an IPv6 address in an IPv4-only file) has no facts there.
        return NO_GEO
      }
    }
    const fromAsn = read(this.asnFile)
    const fromCountry = read(this.countryFile)
    return mergeGeoFacts([fromAsn, fromCountry], [fromCountry, fromAsn])
  }
}
