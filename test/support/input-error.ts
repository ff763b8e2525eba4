// The message of the InputError a synchronous call throws, failing the test when it throws anything else or nothing.
import assert from "node:assert/strict";
import { InputError } from "../../src/core/errors.js";

export function readInputErrorMessage(call: () => unknown): string {
  try {
    call();
  } catch (error) {
    assert.ok(error instanceof InputError, `expected an InputError, got ${String(error)}`);
    return error.message;
  }
  assert.fail("expected an InputError, got none");
}
