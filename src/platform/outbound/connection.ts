import tls from "node:tls"

/** What the HTTPS and the syslog transports share: their trust stores, error reading and deadlines. */

/**
 * The trust store of a send: the system roots plus `extra`. Building it parses every root certificate, so it is made
 * once per distinct `extra` and kept (the service has at most two, from WEBHOOK_CA_FILE and SYSLOG_CA_FILE; tests a
 * few). Bun 1.4.4 honours `secureContext` in `https.request` and `tls.connect` exactly like `ca` (a CA missing from it
 * is refused, the host name is still checked; test/webhooks/send.test.ts), and a send through it costs about a third
 * less CPU than passing `ca` each time.
 */
const secureContexts = new Map<string, tls.SecureContext>()
const MAX_SECURE_CONTEXTS = 16

export const secureContextFor = (extra: ReadonlyArray<string>): tls.SecureContext => {
  const key = extra.join("\n")
  let context = secureContexts.get(key)
  if (context === undefined) {
    context = tls.createSecureContext({ ca: [...tls.rootCertificates, ...extra] })
    if (secureContexts.size >= MAX_SECURE_CONTEXTS) secureContexts.clear()
    secureContexts.set(key, context)
  }
  return context
}

export const clip = (text: string, max = 200): string => (text.length > max ? `${text.slice(0, max)}…` : text)

export const errorCode = (error: unknown): string =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : ""

export const errorMessage = (error: unknown): string => clip(error instanceof Error ? error.message : String(error))

/** Connection failures where nothing was sent: the next checked address may be tried. */
export const NOTHING_SENT = new Set(["ECONNREFUSED", "ENETUNREACH", "EHOSTUNREACH", "EADDRNOTAVAIL"])

export const TIMED_OUT: unique symbol = Symbol("timed out")

/** `promise`, or TIMED_OUT once `ms` have passed (the timer never outlives the race). */
export const withDeadline = async <A>(promise: Promise<A>, ms: number): Promise<A | typeof TIMED_OUT> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      promise,
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, ms))
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}
