/** POSTs a body to an ingest route with a sensor token; returns status and parsed JSON. */
export const ingest = async (
  ingestUrl: string,
  route: string,
  token: string | undefined,
  body: unknown,
  raw = false,
) => {
  const response = await fetch(`${ingestUrl}/ingest/v1/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: raw ? (body as string) : JSON.stringify(body),
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {}
  // biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
  return { status: response.status, headers: response.headers, body: parsed as any }
}

let counter = 0
/** A valid native event; override any field. */
export const nativeEvent = (overrides: Record<string, unknown> = {}) => ({
  sensorEventId: `e-${Date.now()}-${counter++}`,
  time: new Date().toISOString(),
  sourceIp: "203.0.113.50",
  sourcePort: 51000,
  type: "ssh.login_attempt",
  attackerInput: { username: "root", password: "hunter2" },
  ...overrides,
})

/**
 * The iptables fields of an OpenCanary portscan line's logdata (logtypes 5001–5005, as OpenCanary's portscan module
 * writes them); each logtype adds its flag fields (SYN, FIN, URG, PSH).
 */
export const IPTABLES_KV = {
  ID: "54321",
  IN: "eth0",
  LEN: "44",
  MAC: "02:42:ac:11:00:02:02:42:ac:11:00:01:08:00",
  OUT: "",
  PREC: "0x00",
  PROTO: "TCP",
  RES: "0x00",
  TOS: "0x00",
  TTL: "41",
  URGP: "0",
  WINDOW: "1024",
}
