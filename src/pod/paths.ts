// Where things live inside the run pod: the emptyDir mount points and the runner's own directory.

export const POD_WORK_DIR = "/work";
export const POD_STEPS_DIR = "/steps";
export const POD_OUTPUTS_DIR = "/outputs";
/** The runner's own directory in the pod: helper script, step scripts, step logs and exit files. */
export const POD_RUNNER_DIR = "/knotless";
export const POD_HELPER_PATH = `${POD_RUNNER_DIR}/helper.sh`;
export const POD_HEARTBEAT_PATH = `${POD_RUNNER_DIR}/heartbeat`;

/** The emptyDir volumes of the run pod, by volume name. */
export const POD_VOLUMES = [
  { name: "work", mountPath: POD_WORK_DIR },
  { name: "steps", mountPath: POD_STEPS_DIR },
  { name: "outputs", mountPath: POD_OUTPUTS_DIR },
  { name: "knotless", mountPath: POD_RUNNER_DIR },
] as const;
