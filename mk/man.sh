#!/bin/sh
# Writes one man page per command into DIR (xptrace.1 and xptrace-CMD.1), from the
# text the binary prints for --help (`xptrace help [CMD]`), so the pages cannot drift
# from it; every command of its table (`xptrace help --list commands`) gets one.  The
# text is kept as it is (preformatted); "section:" lines become man sections.
# Usage: mk/man.sh XPTRACE DIR
set -e
x=$1
out=$2
mkdir -p "$out"
version=$("$x" --version | cut -d' ' -f2)

# page NAME SUMMARY: roff from the help text on stdin
page() {
	awk -v name="$1" -v summary="$2" -v version="$version" '
	function esc(s) {
		gsub(/\\/, "\\e", s)
		gsub(/-/, "\\-", s)
		if (s ~ /^[.\047]/) s = "\\&" s
		return s
	}
	BEGIN {
		up = toupper(name)
		printf ".TH %s 1 \"\" \"xptrace %s\" \"xptrace manual\"\n", up, version
		printf ".SH NAME\n%s \\- %s\n.SH SYNOPSIS\n.nf\n", esc(name), esc(summary)
		state = "synopsis"
	}
	state == "synopsis" && /^$/ { printf ".fi\n.SH DESCRIPTION\n.nf\n"; state = "body"; next }
	state == "synopsis" { sub(/^usage: /, ""); sub(/^       /, ""); print esc($0); next }
	/^[A-Za-z][^:]*:$/ && length($0) < 100 {
		s = substr($0, 1, length($0) - 1)
		printf ".fi\n.SH %s\n.nf\n", esc(toupper(s))
		next
	}
	{ print esc($0) }
	END { print ".fi" }'
}

"$x" help | page xptrace "hardware-assisted tracer for Linux" >"$out/xptrace.1"
"$x" help --list commands | while IFS="	" read -r cmd summary; do
	"$x" help "$cmd" | page "xptrace-$cmd" "$summary" >"$out/xptrace-$cmd.1"
done
