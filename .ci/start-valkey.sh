#!/usr/bin/env bash
# start-valkey.sh starts a private Valkey server and a private 3-master Valkey
# Cluster, so that the Redis tests can run against Valkey too.
#
# Source it (from bash) from the repository root, after start-redis.sh (whose
# redis-cli joins the Cluster): `. .ci/start-valkey.sh`. It uses
# ../shared/valkey/valkey-server (Valkey 8.0.1; VALKEY_SERVER overrides the
# path) and fails if it is missing. It starts the servers on free loopback
# ports with persistence off, waits until they answer and the Cluster reports
# cluster_state:ok, and exports
#
#   BLOOM_VALKEY_ADDR            127.0.0.1:PORT of the single server
#   BLOOM_VALKEY_CLUSTER_ADDRS   127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
#   BLOOM_VALKEY_PATH            a directory holding redis-server, a link to
#                                valkey-server: put it first on PATH so that
#                                tests that start private servers start Valkey
#   BLOOM_VALKEY_PIDS
#
# and adds stopping them to the shell's EXIT trap (keeping whatever the trap
# did before). Returns non-zero on failure. The RedisBloom module does not
# load into Valkey 8.0.1 ("Failed to register config option bf-error-rate"):
# the servers have no BF.* commands, and the tests run with BLOOM_REDIS_BF=0.

bloom_start_valkey() {
	local bin=${VALKEY_SERVER:-$PWD/../shared/valkey/valkey-server}
	if [ ! -x "$bin" ]; then
		echo "start-valkey: $bin is missing or not executable" >&2
		return 1
	fi
	command -v redis-cli >/dev/null 2>&1 || {
		echo "start-valkey: redis-cli is needed (source start-redis.sh first)" >&2
		return 1
	}
	local dir port pid try i node started ports=() pids=() cluster
	dir=$(mktemp -d "${TMPDIR:-/tmp}/bloom-valkey.XXXXXX") || return 1
	ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$dir/redis-server"
	export BLOOM_VALKEY_PATH=$dir
	# Node 0 is the single server, nodes 1-3 the Cluster's masters.
	for node in 0 1 2 3; do
		cluster=()
		[ "$node" != 0 ] && cluster=(--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000)
		started=
		for try in 1 2 3 4 5 6 7 8 9 10; do
			port=$((20000 + RANDOM % 40000))
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null ||
				(exec 3<>"/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null; then
				continue
			fi
			mkdir -p "$dir/$port"
			(cd "$dir/$port" && exec "$bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
				"${cluster[@]}" --daemonize no --loglevel warning >"$dir/$port/log" 2>&1) &
			pid=$!
			for i in $(seq 1 100); do
				if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
					started=1
					break
				fi
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			if [ -n "$started" ]; then
				ports+=("$port")
				pids+=("$pid")
				break
			fi
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		done
		if [ -z "$started" ]; then
			echo "start-valkey: node $node did not start; see $dir/*/log" >&2
			for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
			return 1
		fi
	done
	export BLOOM_VALKEY_PIDS="${pids[*]}"
	export BLOOM_VALKEY_ADDR="127.0.0.1:${ports[0]}"
	local addrs=()
	for port in "${ports[@]:1}"; do addrs+=("127.0.0.1:$port"); done
	if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1; then
		echo "start-valkey: redis-cli --cluster create failed:" >&2
		cat "$dir/create.log" >&2
		bloom_stop_valkey
		return 1
	fi
	for i in $(seq 1 200); do
		local ok=0
		for port in "${ports[@]:1}"; do
			redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && ok=$((ok + 1))
		done
		if [ "$ok" = 3 ]; then
			export BLOOM_VALKEY_CLUSTER_ADDRS
			BLOOM_VALKEY_CLUSTER_ADDRS=$(
				IFS=,
				echo "${addrs[*]}"
			)
			echo "start-valkey: $("$bin" --version | sed -n 's/.*v=\([^ ]*\).*/Valkey \1/p') on $BLOOM_VALKEY_ADDR, 3-master Cluster on $BLOOM_VALKEY_CLUSTER_ADDRS (pids $BLOOM_VALKEY_PIDS)" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "start-valkey: the Valkey Cluster did not reach cluster_state:ok" >&2
	bloom_stop_valkey
	return 1
}

bloom_stop_valkey() {
	if [ -n "${BLOOM_VALKEY_PIDS:-}" ]; then
		local pid
		for pid in $BLOOM_VALKEY_PIDS; do
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		done
		unset BLOOM_VALKEY_PIDS BLOOM_VALKEY_ADDR BLOOM_VALKEY_CLUSTER_ADDRS
	fi
	return 0
}

# bloom_trap_stop_valkey chains bloom_stop_valkey onto the EXIT trap.
bloom_trap_stop_valkey() {
	local prev=
	eval "set -- $(trap -p EXIT)" # trap -- 'command' EXIT
	[ $# -ge 3 ] && prev=$3
	trap "bloom_stop_valkey; $prev" EXIT
}

if bloom_start_valkey; then
	bloom_trap_stop_valkey
else
	return 1 2>/dev/null || exit 1
fi
