#!/usr/bin/env bash
# start-redis.sh starts a private redis-server for the redisbloom tests.
#
# Source it (from bash): `. .ci/start-redis.sh`. It installs the Debian
# package redis-server with apt-get if redis-server is not on PATH, starts it
# in the background on a free loopback port with persistence off and the
# RedisBloom module loaded, waits until it answers PING, checks that it has
# the BF.* commands, exports BLOOM_REDIS_ADDR=127.0.0.1:PORT,
# BLOOM_REDIS_BF=1 (and BLOOM_REDIS_PID), and adds stopping the server to the
# shell's EXIT trap (keeping whatever the trap did before). Returns non-zero
# on failure, a missing module included.
#
# The module is ../shared/redisbloom/redisbloom.so relative to the
# repository root (built for Debian 12's redis-server 7.0; see its README),
# or the file BLOOM_REDISBLOOM_MODULE names. BLOOM_REDIS_BF is the contract
# the tests read: 1, the servers must have BF.* (tests that need them fail
# without); 0, they must not (those tests skip, the tests of the path
# without them run); unset, the tests ask. Set BLOOM_REDIS_BF=0 before
# sourcing to start a server without the module.

# shellcheck source=redisbloom-module.sh
. "$(dirname "${BASH_SOURCE[0]}")/redisbloom-module.sh" || return 1 2>/dev/null || exit 1

bloom_start_redis() {
	if ! command -v redis-server >/dev/null 2>&1; then
		echo "start-redis: installing redis-server" >&2
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; } >&2; then
			echo "start-redis: cannot install redis-server" >&2
			return 1
		fi
	fi
	local try port pid i
	bloom_module_args || return 1
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 40000))
		# Skip ports something already listens on.
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue
		fi
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
			--daemonize no --loglevel warning "${bloom_module_args[@]}" >"${TMPDIR:-/tmp}/bloom-redis-$port.log" 2>&1 &
		pid=$!
		for i in $(seq 1 100); do
			if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
				if ! bloom_check_bf "$port"; then
					kill "$pid" 2>/dev/null
					wait "$pid" 2>/dev/null
					return 1
				fi
				export BLOOM_REDIS_ADDR="127.0.0.1:$port" BLOOM_REDIS_PID="$pid"
				echo "start-redis: redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') (pid $pid) on $BLOOM_REDIS_ADDR, BLOOM_REDIS_BF=$BLOOM_REDIS_BF ${bloom_module_args[*]}" >&2
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
