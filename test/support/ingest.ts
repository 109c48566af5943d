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
