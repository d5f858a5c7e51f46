#!/bin/sh
# bench-dedup.sh: bloom dedup at its defaults against an earlier bloom and
# awk '!s[$0]++', side by side on one input (issue 33):
#
#	cmd/bloom/bench-dedup.sh [BASE_REV [REPS]]     (from the repository root)
#
# It writes 5*10^6 URL lines, 3.8*10^6 of them distinct (186 MB; the same
# bytes on every machine: cmd/bloom/internal/urllines), builds bloom from the
# work tree ("new"; "classic" is new with -classic) and from BASE_REV (default
# 05769e5, "base"), and runs base, new, classic and awk in turn REPS times
# (default 3), input from a file and output to a file. Per run: wall seconds, CPU seconds (user + system) and
# peak RSS. Then the medians, the ratios of the medians, and the checks of
# new's last output: no line written twice, and the distinct lines missing
# (awk's output is the reference).
set -eu
base=${1:-05769e5}
reps=${2:-3}
root=$(git rev-parse --show-toplevel)
dir=${BENCH_DIR:-/tmp/bloom-bench-dedup}
mkdir -p "$dir"
in=$dir/urls.txt
if [ ! -s "$in" ]; then
	go run -C "$root" ./cmd/bloom/internal/urllines -n 5e6 -distinct 3.8e6 > "$in.tmp"
	mv "$in.tmp" "$in"
fi
go build -C "$root" -o "$dir/bloom-new" ./cmd/bloom
rm -rf "$dir/base-src"
mkdir "$dir/base-src"
git -C "$root" archive "$base" | tar -x -C "$dir/base-src"
go build -C "$dir/base-src" -o "$dir/bloom-base" ./cmd/bloom
rm -rf "$dir/base-src"
awkname=$(readlink -f "$(command -v awk)")
echo "input: $(wc -c < "$in") bytes, $(wc -l < "$in") lines, sha256 $(sha256sum < "$in" | cut -c1-16)...; base $base, new $(git -C "$root" describe --always --dirty); awk is $awkname"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; $(go version)"
times=$dir/times.txt
: > "$times"
i=1
while [ "$i" -le "$reps" ]; do
	for what in base new classic awk; do
		case $what in
		awk) cmd="awk !s[\$0]++" ;;
		classic) cmd="$dir/bloom-new dedup -q -classic" ;;
		*) cmd="$dir/bloom-$what dedup -q" ;;
		esac
		# shellcheck disable=SC2086
		/usr/bin/time -f "$what %e %U %S %M" -a -o "$times" $cmd < "$in" > "$dir/out-$what.txt"
	done
	echo "load after run $i: $(cut -d' ' -f1-3 /proc/loadavg)"
	i=$((i + 1))
done
awk '{ wall[$1] = wall[$1] " " $2; cpu[$1] = cpu[$1] " " ($3 + $4); rss[$1] = $5 }
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	for (w in wall) printf "%-5s wall %s s (median %.2f), cpu %s s (median %.2f), peak RSS %.1f MB\n", w, wall[w], median(wall[w]), cpu[w], median(cpu[w]), rss[w] / 1024
	printf "base/new: wall %.2fx, cpu %.2fx; awk/new: wall %.2fx, cpu %.2fx; base/classic: wall %.2fx, cpu %.2fx\n",
		median(wall["base"]) / median(wall["new"]), median(cpu["base"]) / median(cpu["new"]),
		median(wall["awk"]) / median(wall["new"]), median(cpu["awk"]) / median(cpu["new"]),
		median(wall["base"]) / median(wall["classic"]), median(cpu["base"]) / median(cpu["classic"])
}' "$times"
distinct=$(wc -l < "$dir/out-awk.txt")
written=$(wc -l < "$dir/out-new.txt")
twice=$(sort "$dir/out-new.txt" | uniq -d | wc -l)
echo "new wrote $written lines of $distinct distinct; lines written twice: $twice; distinct lines missing: $((distinct - written))"
if cmp -s "$dir/out-new.txt" "$dir/out-awk.txt"; then
	echo "new's output is awk's, byte for byte"
fi
