/**
 * Waits until `check` holds, polling every 25 ms; fails naming `what` after `ms`. Tests wait for a condition this way,
 * never for a guessed length of time: a fast machine does not wait longer than it must, a slow one is not failed for
 * being slow.
 */
export const eventually = async (what: string, check: () => boolean | Promise<boolean>, ms = 20_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await Bun.sleep(25)
  }
}
