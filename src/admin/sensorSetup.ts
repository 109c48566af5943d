/**
 * The documented sensor profiles and the ready-to-paste configuration shown with a new token. Pure: no I/O.
 *
 * A profile says what the sensor is. The service stores it and sends it as `sensor.profile` in every incident
 * webhook (spec "Webhook payload") and in `sensor.silent` / `sensor.recovered`, so a receiver can route on it; the
 * console shows that profile's set-up first. Nothing else depends on it: every sensor may use every ingest route.
 */
export interface SensorProfile {
  readonly id: string
  readonly label: string
  readonly description: string
  /** The configuration snippet shown first for this profile. */
  readonly setup: SnippetKind
}

export const SENSOR_PROFILES: ReadonlyArray<SensorProfile> = [
  {
    id: "opencanary",
    label: "OpenCanary",
    description:
      "Thinkst OpenCanary (FTP, HTTP, SSH, telnet, MySQL, SMB, RDP… decoys); reports with its own WebhookHandler to /ingest/v1/opencanary.",
    setup: "opencanary",
  },
  {
    id: "cowrie",
    label: "Cowrie",
    description:
      "Cowrie SSH and telnet honeypot; reports with its output_splunk module (Splunk HEC), or its JSON lines to /ingest/v1/cowrie.",
    setup: "cowrie",
  },
  {
    id: "linux-server",
    label: "Linux server",
    description: "A decoy Linux server (SSH, HTTP, …) sending native events or its logs through a HEC shipper.",
    setup: "vector",
  },
  {
    id: "linux-database-server",
    label: "Linux database server",
    description: "A decoy database host (MySQL, PostgreSQL, SSH) sending native events or logs through a HEC shipper.",
    setup: "vector",
  },
  {
    id: "windows-server",
    label: "Windows server",
    description: "A decoy Windows host (SMB, RDP) sending native events or logs through a HEC shipper.",
    setup: "fluentbit",
  },
  {
    id: "network-device",
    label: "Network device",
    description: "A decoy router, switch or firewall management interface (SSH, telnet, HTTP, SNMP).",
    setup: "fluentbit",
  },
  {
    id: "generic",
    label: "Generic",
    description: "Anything else posting native events to /ingest/v1/events or through a Splunk HEC shipper.",
    setup: "vector",
  },
]

/** A sensor created without a profile gets this one. */
export const DEFAULT_PROFILE = "generic"

export const profileIds = (): ReadonlyArray<string> => SENSOR_PROFILES.map((p) => p.id)

export const findProfile = (id: string): SensorProfile | undefined => SENSOR_PROFILES.find((p) => p.id === id)

export type SnippetKind = "opencanary" | "cowrie" | "vector" | "fluentbit" | "heartbeat"

export interface Snippet {
  readonly kind: SnippetKind
  readonly title: string
  /** Where it goes, in one sentence. */
  readonly where: string
  readonly text: string
}

/** JSON string literal content (the token and URL are base64url and URL characters; quoting keeps any value safe). */
const json = (value: string) => JSON.stringify(value)

/**
 * The warning shown beside the set-up snippets (and logged once at start-up) when the console is served over HTTPS
 * but the ingest address sensors are given is plain HTTP (INGEST_URL unset, or set to http://): their bearer tokens
 * would cross the network unencrypted. Undefined when there is nothing to say.
 */
export const plainIngestWarning = (appUrl: string, ingestUrl: string): string | undefined =>
  /^https:/i.test(appUrl) && /^http:/i.test(ingestUrl)
    ? `The ingest address ${ingestUrl} is plain HTTP: sensor tokens would travel unencrypted. Put TLS in front of the ingest listener and set INGEST_URL to its https:// address.`
    : undefined

/** Where the heartbeat snippet keeps the sensor's Authorization header (mode 600 from its creation). */
export const HEARTBEAT_HEADER_FILE = "/etc/decoy-heartbeat.header"

/**
 * The configuration for a new (or rotated) token, with this service's public ingest address (`INGEST_URL`).
 * The profile's own snippet comes first, the heartbeat last.
 */
export const setupSnippets = (input: { ingestUrl: string; token: string; profile: string }): ReadonlyArray<Snippet> => {
  const base = input.ingestUrl.replace(/\/+$/, "")
  const url = new URL(base)
  const tls = url.protocol === "https:"
  const port = url.port !== "" ? url.port : tls ? "443" : "80"
  const all: ReadonlyArray<Snippet> = [
    {
      kind: "opencanary",
      title: "OpenCanary (opencanary.conf)",
      where:
        'Add this handler under "logger" → "kwargs" → "handlers", then restart opencanaryd. The timeout keeps OpenCanary from waiting forever when the service is unreachable.',
      text: [
        `"Webhook": {`,
        `    "class": "opencanary.logger.WebhookHandler",`,
        `    "url": ${json(`${base}/ingest/v1/opencanary`)},`,
        `    "method": "POST",`,
        `    "status_code": 200,`,
        `    "headers": {"Authorization": ${json(`Bearer ${input.token}`)}},`,
        `    "timeout": 5`,
        `}`,
      ].join("\n"),
    },
    {
      kind: "cowrie",
      title: "Cowrie (cowrie.cfg)",
      where:
        "Replace the [output_splunk] section of etc/cowrie.cfg (Splunk HTTP Event Collector), then restart Cowrie.",
      text: [
        "[output_splunk]",
        "enabled = true",
        `url = ${base}/services/collector/event`,
        `token = ${input.token}`,
        "index = cowrie",
        "sourcetype = cowrie",
        "source = cowrie",
      ].join("\n"),
    },
    {
      kind: "vector",
      title: "Vector (splunk_hec_logs sink)",
      where: "Add to vector.toml; set inputs to the id of the source that reads the honeypot's JSON log.",
      text: [
        "[sinks.decoy_service]",
        'type = "splunk_hec_logs"',
        'inputs = ["honeypot_log"]',
        `endpoint = ${json(base)}`,
        `default_token = ${json(input.token)}`,
        'encoding.codec = "json"',
      ].join("\n"),
    },
    {
      kind: "fluentbit",
      title: "Fluent Bit (splunk output)",
      where: "Add to fluent-bit.conf; match the tag of the input that reads the honeypot's JSON log.",
      text: [
        "[OUTPUT]",
        "    name          splunk",
        "    match         honeypot.*",
        `    host          ${url.hostname}`,
        `    port          ${port}`,
        `    splunk_token  ${input.token}`,
        `    tls           ${tls ? "on" : "off"}`,
      ].join("\n"),
    },
    {
      kind: "heartbeat",
      title: "Heartbeat (every minute)",
      where:
        "As root, paste it into a shell, then press Ctrl-D: the header goes into a file only root can read from the start, and the token is never on a command line (visible to every local user) nor in the shell history. Then call it from cron or a systemd timer; set the sensor's heartbeat interval to match.",
      text: [
        `# crontab: * * * * * curl -fsS -m 10 -X POST -H @${HEARTBEAT_HEADER_FILE} ${base}/ingest/v1/heartbeat`,
        "# The next command reads the header line below it from the terminal; press Ctrl-D after it.",
        `(umask 077; rm -f ${HEARTBEAT_HEADER_FILE} && cat > ${HEARTBEAT_HEADER_FILE})`,
        `Authorization: Bearer ${input.token}`,
      ].join("\n"),
    },
  ]
  const first = findProfile(input.profile)?.setup
  return [...all.filter((s) => s.kind === first), ...all.filter((s) => s.kind !== first)]
}
