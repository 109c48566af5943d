import { connect } from "node:net"
import { freePort } from "./ports.ts"

/**
 * A Redis of the fault suite's own on a free port (no persistence), spawned by the test and killed in afterAll.
 * The machine's shared Redis (6379) is never touched.
 */
export interface OwnRedis {
  readonly port: number
  readonly url: string
  readonly stop: () => Promise<void>
}

/** True when a Redis answers PING on the port. */
const pong = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1")
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once("error", () => done(false))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")))
  })

export const startRedis = async (): Promise<OwnRedis> => {
  const port = await freePort()
  const child = Bun.spawn(
    ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdout: "ignore", stderr: "pipe" },
  )
  const deadline = Date.now() + 10_000
  while (!(await pong(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`redis-server did not start on ${port}: ${await new Response(child.stderr).text()}`)
    }
    await Bun.sleep(50)
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      child.kill("SIGKILL")
      await child.exited
    },
  }
}
