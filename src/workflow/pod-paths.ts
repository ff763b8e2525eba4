// Where things live inside the run pod: the emptyDir mount points and the runner's own directory.

export const POD_WORK_DIR = "/work";
export const POD_STEPS_DIR = "/steps";
export const POD_OUTPUTS_DIR = "/outputs";
/** The runner's own directory in the pod: helper script, step scripts, step logs and exit files. */
export const POD_RUNNER_DIR = "/knotless";
export const POD_HELPER_PATH = `${POD_RUNNER_DIR}/helper.sh`;
export const POD_HEARTBEAT_PATH = `${POD_RUNNER_DIR}/heartbeat`;
/** The steps' environment files (uploaded with the runner's files, plus what `$KNOTLESS_ENV` carries between steps). */
export const POD_ENV_DIR = `${POD_RUNNER_DIR}/env`;
/** The run's variables and the workflow's environment, as `export NAME='value'` lines. */
export const POD_RUN_ENV_PATH = `${POD_ENV_DIR}/run.env`;
/** What earlier steps wrote to `$KNOTLESS_ENV`, as `export` lines the helper appends after each step. */
export const POD_CARRIED_ENV_PATH = `${POD_ENV_DIR}/carried.env`;
/** The memory-backed volume that holds the run's secrets (never on a disk, never in /outputs). */
export const POD_SECRETS_DIR = "/knotless-secrets";
/** The secrets, as `export` lines; mode 0600 in a 0700 directory, read only by the step's wrapper. */
export const POD_SECRETS_PATH = `${POD_SECRETS_DIR}/env`;

/** The emptyDir volumes of the run pod, by volume name; `medium` Memory is a tmpfs. */
export const POD_VOLUMES: ReadonlyArray<{
  readonly name: string;
  readonly mountPath: string;
  readonly medium?: "Memory";
}> = [
  { name: "work", mountPath: POD_WORK_DIR },
  { name: "steps", mountPath: POD_STEPS_DIR },
  { name: "outputs", mountPath: POD_OUTPUTS_DIR },
  { name: "knotless", mountPath: POD_RUNNER_DIR },
  { name: "secrets", mountPath: POD_SECRETS_DIR, medium: "Memory" },
];
