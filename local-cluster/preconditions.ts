// A delete's preconditions (DeleteOptions.preconditions): the object must still have this uid and resourceVersion.

import { conflict } from "./api-error.js";
import type { KubeObject } from "./types.js";

export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/** Throws 409 Conflict, worded as the API server words it, when the object is not the one the caller saw. */
export function checkPreconditions(
  resource: string,
  group: string,
  current: KubeObject,
  preconditions: Preconditions | undefined,
): void {
  const fail = (what: string, wanted: string, actual: string): never => {
    throw conflict(
      resource,
      group,
      current.metadata.name,
      `Precondition failed: ${what} in precondition: ${wanted}, ${what} in object meta: ${actual}`,
    );
  };
  if (preconditions?.uid && preconditions.uid !== current.metadata.uid)
    fail("UID", preconditions.uid, current.metadata.uid);
  if (preconditions?.resourceVersion && preconditions.resourceVersion !== current.metadata.resourceVersion)
    fail("ResourceVersion", preconditions.resourceVersion, current.metadata.resourceVersion);
}
