import { readFileSync } from "node:fs"
import { connect } from "node:net"

/**
 * Sends a recorded HTTP request byte for byte over a fresh TCP connection (as the honeypot did) and reads one
 * response. Only the sensor token placeholder in the recorded headers is replaced, never a byte of the body.
 */

export const TOKEN_PLACEHOLDER = "SENSOR-TOKEN-PLACEHOLDER"

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** A recorded request (`.http` file: request line, headers, blank line, body) with the token put in. */
export const recordedRequest = (path: string, token: string): Buffer => {
  const raw = readFileSync(path)
  const split = raw.indexOf("\r\n\r\n")
  const head = raw.subarray(0, split).toString("latin1").replace(TOKEN_PLACEHOLDER, token)
  return Buffer.concat([Buffer.from(head, "latin1"), raw.subarray(split)])
}

/** The body of a recorded request, as bytes. */
export const recordedBody = (path: string): Buffer => {
  const raw = readFileSync(path)
  return raw.subarray(raw.indexOf("\r\n\r\n") + 4)
}

export const sendRaw = (ingestUrl: string, bytes: Uint8Array): Promise<RawResponse> => {
  const url = new URL(ingestUrl)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) })
    let data = Buffer.alloc(0)
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error("no complete response within 10 s"))
    }, 10_000)
    const tryParse = (ended: boolean) => {
      const split = data.indexOf("\r\n\r\n")
      if (split < 0) return false
      const lines = data.subarray(0, split).toString("latin1").split("\r\n")
      const status = Number(lines[0]?.split(" ")[1])
      const headers: Record<string, string> = {}
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(":")
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      const length = headers["content-length"]
      const body = data.subarray(split + 4)
      if (length === undefined ? !ended : body.length < Number(length)) return false
      clearTimeout(timer)
      socket.destroy()
      resolve({
        status,
        headers,
        body: body.subarray(0, length === undefined ? body.length : Number(length)).toString("utf8"),
      })
      return true
    }
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      tryParse(false)
    })
    socket.on("end", () => {
      if (!tryParse(true)) {
        clearTimeout(timer)
        reject(new Error(`connection closed before a complete response: ${data.toString("latin1").slice(0, 200)}`))
      }
    })
    socket.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    socket.write(bytes)
  })
}
