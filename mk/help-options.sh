#!/bin/sh
# Prints the options of one command, one a line, from the text its --help prints
# (`XPTRACE help CMD`): every "-x" / "--name" at the start of an option line, before
# the two spaces that start its description.  Used by mk/completion.sh and the tests.
# Usage: mk/help-options.sh XPTRACE CMD
"$1" help "$2" | awk '
	/^ +-/ {
		line = $0
		sub(/^ +/, "", line)
		i = index(line, "  ")
		if (i) line = substr(line, 1, i - 1)
		n = split(line, w, /[ ,|\/]+/)
		for (k = 1; k <= n; k++) {
			t = w[k]
			if (t !~ /^--?[A-Za-z0-9]/) continue
			sub(/[[=].*/, "", t)
			if (!seen[t]++) print t
		}
	}'
