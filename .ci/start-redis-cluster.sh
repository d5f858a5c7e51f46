#!/usr/bin/env bash
# start-redis-cluster.sh starts a private 3-master Redis Cluster for the
# redisbloom tests.
#
# Source it (from bash) after start-redis.sh: `. .ci/start-redis-cluster.sh`.
# It starts three redis-server processes with --cluster-enabled yes on free
# loopback ports (persistence off, state in a temporary directory, the
# RedisBloom module loaded as start-redis.sh loads it: BLOOM_REDIS_BF=1 and
# ../shared/redisbloom/redisbloom.so or BLOOM_REDISBLOOM_MODULE, fails if it
# is missing; BLOOM_REDIS_BF=0, none), checks their BF.* commands, joins
# them with `redis-cli --cluster create ... --cluster-replicas 0
# --cluster-yes`, waits until every node reports cluster_state:ok, exports
# BLOOM_REDIS_CLUSTER_ADDRS=127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3 (and
# BLOOM_REDIS_CLUSTER_PIDS), and adds stopping the nodes to the shell's EXIT
# trap (keeping whatever the trap did before). Returns non-zero on failure.

# shellcheck source=redisbloom-module.sh
. "$(dirname "${BASH_SOURCE[0]}")/redisbloom-module.sh" || return 1 2>/dev/null || exit 1

bloom_start_redis_cluster() {
	command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 || {
		echo "start-redis-cluster: redis-server and redis-cli are needed (source start-redis.sh first)" >&2
		return 1
	}
	local dir ports=() pids=() port pid try i node started
	bloom_module_args || return 1
	dir=$(mktemp -d "${TMPDIR:-/tmp}/bloom-cluster.XXXXXX") || return 1
	for node in 1 2 3; do
		started=
		for try in 1 2 3 4 5 6 7 8 9 10; do
			port=$((20000 + RANDOM % 40000))
			# Skip ports in use, and those whose cluster bus port (+10000) is.
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null ||
				(exec 3<>"/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null; then
				continue
			fi
			mkdir -p "$dir/$port"
			(cd "$dir/$port" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
				--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
				--daemonize no --loglevel warning "${bloom_module_args[@]}" >"$dir/$port/log" 2>&1) &
			pid=$!
			for i in $(seq 1 100); do
				if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
					if ! bloom_check_bf "$port"; then
						for pid in "${pids[@]}" "$pid"; do kill "$pid" 2>/dev/null; done
						return 1
					fi
					started=1
					break
				fi
				kill -0 "$pid" 2>/dev/null || break # it died: port taken meanwhile?
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
			echo "start-redis-cluster: node $node did not start; see $dir/*/log" >&2
			for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
			return 1
		fi
	done
	export BLOOM_REDIS_CLUSTER_PIDS="${pids[*]}"
	local addrs=()
	for port in "${ports[@]}"; do addrs+=("127.0.0.1:$port"); done
	if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1; then
		echo "start-redis-cluster: redis-cli --cluster create failed:" >&2
		cat "$dir/create.log" >&2
		bloom_stop_redis_cluster
		return 1
	fi
	for i in $(seq 1 200); do
		local ok=0
		for port in "${ports[@]}"; do
			redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && ok=$((ok + 1))
		done
		if [ "$ok" = 3 ]; then
			export BLOOM_REDIS_CLUSTER_ADDRS
			BLOOM_REDIS_CLUSTER_ADDRS=$(
				IFS=,
				echo "${addrs[*]}"
			)
			echo "start-redis-cluster: 3 masters on $BLOOM_REDIS_CLUSTER_ADDRS (pids $BLOOM_REDIS_CLUSTER_PIDS), BLOOM_REDIS_BF=$BLOOM_REDIS_BF" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "start-redis-cluster: the cluster did not reach cluster_state:ok" >&2
	bloom_stop_redis_cluster
	return 1
}

bloom_stop_redis_cluster() {
	if [ -n "${BLOOM_REDIS_CLUSTER_PIDS:-}" ]; then
		local pid
		for pid in $BLOOM_REDIS_CLUSTER_PIDS; do
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		done
		unset BLOOM_REDIS_CLUSTER_PIDS BLOOM_REDIS_CLUSTER_ADDRS
	fi
	return 0
}

# bloom_trap_stop_cluster chains bloom_stop_redis_cluster onto the EXIT trap.
bloom_trap_stop_cluster() {
	local prev=
	eval "set -- $(trap -p EXIT)" # trap -- 'command' EXIT
	[ $# -ge 3 ] && prev=$3
	trap "bloom_stop_redis_cluster; $prev" EXIT
}

if bloom_start_redis_cluster; then
	bloom_trap_stop_cluster
else
	return 1 2>/dev/null || exit 1
fi
