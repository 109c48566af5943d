import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestCertificate } from "./tls.ts"

/**
 * A real rsyslog (Debian's rsyslogd with the GnuTLS stream driver: packages `rsyslog` and `rsyslog-gnutls`) for the
 * syslog channel tests: started per test file on a free port (imtcp port 0, the port read back from
 * listenPortFileName), with its own configuration, certificates and output in a temporary folder. It takes RFC 5425
 * (TLS, octet-counted frames), parses each message with its RFC 5424 parser, splits the structured data with
 * mmpstrucdata, and writes one JSON line per message (`%jsonmesg%`: pri, timereported, hostname, app-name, procid,
 * msgid, structured-data, msg, and `$!` with the parsed SD) to a file the test reads.
 */

export const RSYSLOGD = "/usr/sbin/rsyslogd"
const GTLS_MODULE_DIRS = ["/usr/lib/x86_64-linux-gnu/rsyslog", "/usr/lib/aarch64-linux-gnu/rsyslog", "/usr/lib/rsyslog"]

/** Why rsyslog cannot run here, or undefined when it can. */
export const rsyslogMissing = (): string | undefined => {
  if (!existsSync(RSYSLOGD)) return `${RSYSLOGD} is missing: apt-get install -y rsyslog rsyslog-gnutls`
  if (!GTLS_MODULE_DIRS.some((dir) => existsSync(join(dir, "lmnsd_gtls.so")))) {
    return "rsyslog's GnuTLS driver (lmnsd_gtls.so) is missing: apt-get install -y rsyslog-gnutls"
  }
  return undefined
}

/** One message as rsyslog parsed it (`%jsonmesg%`; values are strings as rsyslog gives them). */
export interface ParsedSyslog {
  readonly pri: string
  readonly syslogfacility: string
  readonly syslogseverity: string
  readonly "protocol-version": string
  readonly timereported: string
  readonly hostname: string
  readonly "app-name": string
  readonly procid: string
  readonly msgid: string
  readonly "structured-data": string
  readonly msg: string
  readonly rawmsg: string
  /** mmpstrucdata's split of the structured data: `{"rfc5424-sd": {<SD-ID>: {<name>: <unescaped value>}}}`. */
  readonly "$!"?: { readonly "rfc5424-sd"?: Readonly<Record<string, Readonly<Record<string, string>>>> }
}

export interface Rsyslog {
  readonly port: number
  readonly dir: string
  /** Every message written so far, in arrival order. */
  readonly messages: () => ReadonlyArray<ParsedSyslog>
  /** Waits until at least `count` messages are written (or `withinMs` passed) and returns them. */
  readonly waitFor: (count: number, withinMs?: number) => Promise<ReadonlyArray<ParsedSyslog>>
  /** rsyslogd's own diagnostics (stderr), e.g. TLS errors. */
  readonly log: () => string
  readonly stop: () => Promise<void>
}

export interface RsyslogOptions {
  /** The server certificate and key (and the CA the test trusts, unused by rsyslog in anon mode). */
  readonly certificate: TestCertificate
  /** rsyslog's maxMessageSize; default 256k (above the formatter's 64 KiB bound). */
  readonly maxMessageSize?: string
  /**
   * More of the ruleset, after the action that writes every message to `messages()`: RainerScript given the folder
   * rsyslog runs in (for files of its own), with the `jsonLine` template (`%jsonmesg%`) defined. Read such a file
   * with `readJsonLines`.
   */
  readonly rules?: (dir: string) => string
}

/** The messages an omfile action with the `jsonLine` template has written to `file` so far. */
export const readJsonLines = (file: string): ReadonlyArray<ParsedSyslog> => {
  if (!existsSync(file)) return []
  // Only complete lines: the last piece (after the final newline) may be a line rsyslog is still writing.
  return readFileSync(file, "utf8")
    .split("\n")
    .slice(0, -1)
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as ParsedSyslog)
}

/** Starts rsyslogd in the foreground (`-n`) with a configuration of its own; `stop` ends it and removes the folder. */
export const startRsyslog = async (options: RsyslogOptions): Promise<Rsyslog> => {
  const missing = rsyslogMissing()
  if (missing !== undefined) throw new Error(missing)
  const dir = mkdtempSync(join(tmpdir(), "test-rsyslog-"))
  writeFileSync(join(dir, "ca.pem"), options.certificate.caCert)
  writeFileSync(join(dir, "server.pem"), options.certificate.cert)
  writeFileSync(join(dir, "server.key"), options.certificate.key, { mode: 0o600 })
  const out = join(dir, "out.jsonl")
  const portFile = join(dir, "port")
  writeFileSync(
    join(dir, "rsyslog.conf"),
    `global(
  workDirectory="${dir}"
  maxMessageSize="${options.maxMessageSize ?? "256k"}"
  defaultNetstreamDriver="gtls"
  defaultNetstreamDriverCAFile="${dir}/ca.pem"
  defaultNetstreamDriverCertFile="${dir}/server.pem"
  defaultNetstreamDriverKeyFile="${dir}/server.key"
)
module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")
module(load="mmpstrucdata")
template(name="jsonLine" type="string" string="%jsonmesg%\\n")
ruleset(name="channelTest") {
  action(type="mmpstrucdata" sd_name.lowercase="off")
  action(type="omfile" file="${out}" template="jsonLine" flushOnTXEnd="on" asyncWriting="off")
${options.rules?.(dir) ?? ""}
}
input(type="imtcp" address="127.0.0.1" port="0" listenPortFileName="${portFile}" ruleset="channelTest")
`,
  )
  const child = Bun.spawn([RSYSLOGD, "-n", "-f", join(dir, "rsyslog.conf"), "-i", join(dir, "rsyslogd.pid")], {
    stdout: "pipe",
    stderr: "pipe",
  })
  let diagnostics = ""
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) diagnostics += decoder.decode(chunk, { stream: true })
  }
  void collect(child.stdout)
  void collect(child.stderr)

  const until = performance.now() + 10_000
  let port = 0
  while (performance.now() < until) {
    if (child.exitCode !== null) break
    const text = existsSync(portFile) ? readFileSync(portFile, "utf8").trim() : ""
    if (/^[0-9]+$/.test(text) && Number(text) > 0) {
      port = Number(text)
      break
    }
    await Bun.sleep(25)
  }
  if (port === 0) {
    child.kill()
    await child.exited
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`rsyslogd did not start listening: ${diagnostics}`)
  }

  return {
    port,
    dir,
    messages: () => readJsonLines(out),
    waitFor: async (count, withinMs = 5000) => {
      const stop = performance.now() + withinMs
      while (performance.now() < stop) {
        const lines = readJsonLines(out)
        if (lines.length >= count) return lines
        await Bun.sleep(25)
      }
      return readJsonLines(out)
    },
    log: () => diagnostics,
    stop: async () => {
      child.kill("SIGTERM")
      await child.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
