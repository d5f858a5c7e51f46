#!/usr/bin/env bash
# start-redis.sh starts a private redis-server for the redisbloom tests.
#
# Source it (from bash): `. .ci/start-redis.sh`. It installs the Debian
# package redis-server with apt-get if redis-server is not on PATH, starts it
# in the background on a free loopback port with persistence off, waits until
# it answers PING, exports BLOOM_REDIS_ADDR=127.0.0.1:PORT (and
# BLOOM_REDIS_PID), and adds stopping the server to the shell's EXIT trap
# (keeping whatever the trap did before). Returns non-zero on failure.

bloom_start_redis() {
	if ! command -v redis-server >/dev/null 2>&1; then
		echo "start-redis: installing redis-server" >&2
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; } >&2; then
			echo "start-redis: cannot install redis-server" >&2
			return 1
		fi
	fi
	local try port pid i
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		# Skip ports something already listens on.
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue
		fi
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
			--daemonize no --loglevel warning >"${TMPDIR:-/tmp}/bloom-redis-$port.log" 2>&1 &
		pid=$!
		for i in $(seq 1 100); do
			if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
				export BLOOM_REDIS_ADDR="127.0.0.1:$port" BLOOM_REDIS_PID="$pid"
				echo "start-redis: redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') (pid $pid) on $BLOOM_REDIS_ADDR" >&2
				return 0
			fi
			kill -0 "$pid" 2>/dev/null || break # it died: port taken meanwhile?
			sleep 0.1
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	echo "start-redis: redis-server did not start; see ${TMPDIR:-/tmp}/bloom-redis-*.log" >&2
	return 1
}

bloom_stop_redis() {
	if [ -n "${BLOOM_REDIS_PID:-}" ]; then
		kill "$BLOOM_REDIS_PID" 2>/dev/null
		wait "$BLOOM_REDIS_PID" 2>/dev/null
		unset BLOOM_REDIS_PID BLOOM_REDIS_ADDR
	fi
	return 0
}

# bloom_trap_stop chains bloom_stop_redis onto the EXIT trap instead of
# replacing it. (A function, so that `set --` does not touch the caller's
# positional parameters.)
bloom_trap_stop() {
	local prev=
	eval "set -- $(trap -p EXIT)" # trap -- 'command' EXIT
	[ $# -ge 3 ] && prev=$3
	trap "bloom_stop_redis; $prev" EXIT
}

if bloom_start_redis; then
	bloom_trap_stop
else
	return 1 2>/dev/null || exit 1
fi
