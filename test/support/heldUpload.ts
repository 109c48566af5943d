/**
 * `bun test/support/heldUpload.ts <ingest url> <sensor token>`: a chunked upload of events to /ingest/v1/events that
 * holds its connection open, a space a second, until a line arrives on stdin; then it sends the events (the JSON
 * array on that line), ends the body and prints the answer's status. Its own process, so that the space a second
 * keeps coming however busy the test process is.
 */
import { connect } from "node:net"

const [ingestUrl, token] = process.argv.slice(2)
if (ingestUrl === undefined || token === undefined) throw new Error("usage: heldUpload.ts <ingest url> <token>")
const url = new URL(ingestUrl)
const socket = connect({ host: url.hostname, port: Number(url.port) })
const chunk = (text: string) => socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`)
let received = ""
socket.on("data", (data: Buffer) => {
  received += data.toString("utf8")
})
socket.write(
  `POST /ingest/v1/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n` +
    "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
)
chunk("[")
const trickle = setInterval(() => chunk(" "), 1000)

let line = ""
for await (const data of process.stdin) {
  line += Buffer.from(data).toString("utf8")
  if (line.includes("\n")) break
}
clearInterval(trickle)
chunk(line.trim().slice(1))
socket.write("0\r\n\r\n")
const deadline = Date.now() + 15_000
while (!/\r\n\r\n[\s\S]*\}$/.test(received) && Date.now() < deadline) await Bun.sleep(20)
socket.destroy()
console.log(Number(received.split(" ")[1]))
