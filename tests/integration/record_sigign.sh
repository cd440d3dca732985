#!/bin/bash
# record runs the command with the signal dispositions xptrace was started with: a
# signal ignored by the caller (nohup, a background job of a script) stays ignored in
# the command, as without xptrace, though xptrace handles SIGINT/SIGTERM/SIGHUP/SIGPIPE
# itself.  (gzip leaves an ignored SIGINT alone and installs its handler otherwise: its
# instruction stream under step mode differed from single-step ground truth.)
. "$(dirname "$0")/../lib.sh"

# from all-default dispositions: make may run under a caller that ignores more (a
# background job, nohup; a background make here ignored signals 32 and 33)
bare=$(env --default-signal bash -c "trap '' INT HUP PIPE; grep SigIgn /proc/self/status")
# (signals 32 and 33, glibc's own, cannot be reset: only these three bits are asked)
check_eq "the shell ignores INT, HUP, PIPE for its children" 4099 "$(( 0x$(awk '{ print $2 }' <<<"$bare") & 0x1003 ))"
step=$(env --default-signal bash -c "trap '' INT HUP PIPE; \"\$0\" record -q --mode step -o \"\$1\" -- grep SigIgn /proc/self/status" "$XPTRACE" "$TMP/step")
check_eq "record --mode step: the command ignores the same signals" "$bare" "$step"
dfl=$("$XPTRACE" record -q --mode step -o "$TMP/dfl" -- grep SigIgn /proc/self/status)
check_eq "record --mode step: none ignored when the caller ignored none" "$(grep SigIgn /proc/self/status)" "$dfl"
