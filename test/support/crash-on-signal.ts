// Loaded into a child process with `node --import`: SIGUSR2 makes it throw an uncaught exception from a timer, as a bug would.
process.on("SIGUSR2", () => {
  setTimeout(() => {
    throw new Error("injected crash: an uncaught exception thrown by the test's --import module on SIGUSR2");
  }, 0);
});
