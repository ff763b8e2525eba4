// A matcher for assert.rejects: the error is an InfraError with this reason (and a message matching `message`).
import assert from "node:assert/strict";
import { InfraError } from "../../src/core/errors.js";

export function isInfraError(reason: InfraError["reason"], message?: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof InfraError, `expected an InfraError, got ${String(error)}`);
    assert.equal(error.reason, reason);
    if (message) assert.match(error.message, message);
    return true;
  };
}
