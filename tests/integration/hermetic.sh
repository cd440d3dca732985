#!/bin/bash
# A trace decodes the same whatever the machine holds: every shipped trace and a few
# recorded here are decoded with an empty HOME, then again with a ~/.debug full of
# conflicting entries under the traces' own build-ids (other binaries at the same
# paths, another vdso, other kernel symbols), and from a copy at another path (with a
# space in it): every output must be byte for byte the same.  A perf.data without its
# snapshots is decoded from that ~/.debug, which shows the entries are in perf's layout
# and would be taken if the trace's snapshots were not preferred.
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
cd "$TMP" || exit 1

# recorded here: samples with call chains over threads, a fork and an exec (the vdso's
# clock_gettime among them), and an exact step trace
"$XPTRACE" record -q -o rec-sample -F 999 -g -- "$PROGS/tree" 200 "$PROGS/dec_work" 200 >/dev/null 2>&1
setarch -R "$XPTRACE" record -q --mode step -o rec-step -- "$PROGS/step_basic" >/dev/null 2>&1
for t in rec-sample rec-step; do
	check_eq "$t recorded" yes "$([ -s $t/perf.data ] && echo yes)"
done

# the views of a trace, each into OUT.N; $1 trace directory, $2 output prefix, $3 the
# function to annotate
decode_all() {
	local dir=$1 out=$2 k=0 view in
	if [ -f "$dir/perf.data" ]; then
		in=(-i "$dir")
	else	# traces/pt-spin: raw PT, the binary beside it, given by a relative path
		in=(--pt trace.pt --elf ptspin:0x555555554000)
	fi
	for view in "--functions" "--calltree" "--calltree --format callgrind" "--blocks --format jsonl" \
		"--calls --format jsonl" "--insn --format jsonl" "--annotate $3"; do
		k=$((k + 1))
		case $view in --calls* | --insn*) [ "$dir" = "$TMP/rec-sample" ] && continue ;; esac
		if [ -f "$dir/perf.data" ]; then
			# shellcheck disable=SC2086
			"$XPTRACE" decode "${in[@]}" $view >"$out.$k" 2>&1
		else
			# shellcheck disable=SC2086
			(cd "$dir" && "$XPTRACE" decode "${in[@]}" $view) >"$out.$k" 2>&1
		fi
		echo "$view" >"$out.$k.view"
	done
}

# ~/.debug in perf's layout with other files under the trace's build-ids
conflicting_cache() {	# $1 perf.data, $2 HOME to fill
	local bid path d other vdso_other
	vdso_other=$(ls "$XP_ROOT"/traces/step-basic/\[vdso\]/*/vdso)
	perf buildid-list -i "$1" 2>/dev/null | while read -r bid path; do
		case $path in
		"[vdso]")
			case $vdso_other in */$bid/vdso) other=$PROGS/hot ;; *) other=$vdso_other ;; esac
			d="$2/.debug/[vdso]/$bid"; mkdir -p "$d"; cp "$other" "$d/vdso" ;;
		"[kernel.kallsyms]")
			d="$2/.debug/[kernel.kallsyms]/$bid"; mkdir -p "$d"
			printf 'ffffffff81000000 T _text\nffffffff81000000 T conflicting_kernel_text\n' >"$d/kallsyms" ;;
		/*)
			d="$2/.debug$path/$bid"; mkdir -p "$d"; cp "$PROGS/hot" "$d/elf" ;;
		*)	continue ;;
		esac
		mkdir -p "$2/.debug/.build-id/${bid:0:2}"
		ln -sfn "$d" "$2/.debug/.build-id/${bid:0:2}/${bid:2}"
	done
}

# an output's digest, less callgrind's "cmd:" line (the input's path, as given); $2 $3:
# the moved copy's path, put back to the original's (a raw trace's binary is named
# by where it was given)
digest() {
	grep -v '^cmd: ' "$1" | sed "s|${2:-^$}|${3:-}|g" | md5sum
}

for dir in "$XP_ROOT"/traces/*/ "$TMP/rec-sample/" "$TMP/rec-step/"; do
	dir=${dir%/}
	name=$(basename "$dir")
	clean=$TMP/home-clean-$name dirty=$TMP/home-dirty-$name
	mkdir -p "$clean" "$dirty"
	[ -f "$dir/perf.data" ] && conflicting_cache "$dir/perf.data" "$dirty"
	fn=main
	case $name in pt-spin | rec-sample) fn=spin ;; esac
	HOME=$clean decode_all "$dir" "$TMP/$name.clean" $fn
	HOME=$dirty decode_all "$dir" "$TMP/$name.dirty" $fn
	moved="$TMP/another place/$name"
	mkdir -p "$TMP/another place" && cp -a "$dir" "$moved"
	HOME=$dirty decode_all "$moved" "$TMP/$name.moved" $fn
	for f in "$TMP/$name".clean.[0-9]; do
		k=${f##*.}
		view=$(cat "$f.view")
		want=$(digest "$f")
		check_eq "$name: $view: a conflicting ~/.debug changes nothing ($(wc -l <"$f") lines)" \
			"$want" "$(digest "$TMP/$name.dirty.$k")"
		check_eq "$name: $view: the same from a copy at another path" \
			"$want" "$(digest "$TMP/$name.moved.$k" "$moved" "$dir")"
	done
done
check_eq "the sample trace's conflicting cache has the vdso" yes \
	"$(ls "$TMP"/home-dirty-rec-sample/.debug/\[vdso\]/*/vdso >/dev/null 2>&1 && echo yes)"

# the control: without its snapshots the sample trace's perf.data looks in ~/.debug,
# where the conflicting entries are refused by their build-ids, named, and the
# recorded paths name its functions
mkdir alone && cp rec-sample/perf.data alone/
HOME=$TMP/home-clean-rec-sample "$XPTRACE" decode -i alone --functions >alone.clean 2>&1
HOME=$TMP/home-dirty-rec-sample "$XPTRACE" decode -i alone --functions >alone.dirty 2>&1
check_match "control: without snapshots the trace is named from the host's binaries" ' spin$' "$(cat alone.clean)"
check_match "control: ... a conflicting ~/.debug is looked in, its files refused" \
	"snapshot $TMP/home-dirty-rec-sample/\.debug/\.build-id/.* is unusable: build-id mismatch" "$(cat alone.dirty)"
check_match "control: ... and the recorded paths name the functions" ' spin$' "$(cat alone.dirty)"
