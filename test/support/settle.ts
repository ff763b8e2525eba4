// Lets pending promise chains and I/O callbacks run between mocked-timer ticks, without waiting on the clock.

/** Yields to the event loop `rounds` times (setImmediate, which mocked timers leave real), so work a tick started can finish. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i += 1) await new Promise((resolve) => setImmediate(resolve));
}
