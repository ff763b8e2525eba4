# Whether git is on the image's PATH (rendered by buildGitProbeCommand in src/pod/git-clone-script.ts): always exits 0,
# printing GIT_FOUND_TAG when it is. Settings: GIT_FOUND_TAG.
command -v git > /dev/null 2>&1 && echo "$GIT_FOUND_TAG"; exit 0
