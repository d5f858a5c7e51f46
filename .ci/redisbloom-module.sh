#!/usr/bin/env bash
# redisbloom-module.sh defines the functions start-redis.sh and
# start-redis-cluster.sh use to load the RedisBloom module into the servers
# they start, and to check it is there (BLOOM_REDIS_BF, see start-redis.sh).
# Sourced by them; it starts nothing.

# bloom_redisbloom_module prints the absolute path of the RedisBloom module,
# or fails saying where it looked.
bloom_redisbloom_module() {
	local root mod
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || return 1
	mod=${BLOOM_REDISBLOOM_MODULE:-$root/../shared/redisbloom/redisbloom.so}
	if [ ! -f "$mod" ]; then
		echo "start-redis: the RedisBloom module is missing: $mod (set BLOOM_REDISBLOOM_MODULE to its path, or BLOOM_REDIS_BF=0 to run without it)" >&2
		return 1
	fi
	echo "$(cd "$(dirname "$mod")" && pwd)/$(basename "$mod")"
}

# bloom_module_args sets the array bloom_module_args to redis-server's
# arguments loading the module, empty under BLOOM_REDIS_BF=0, and exports
# BLOOM_REDIS_BF.
bloom_module_args() {
	case "${BLOOM_REDIS_BF:-1}" in
	0)
		bloom_module_args=()
		export BLOOM_REDIS_BF=0
		;;
	1)
		local mod
		mod=$(bloom_redisbloom_module) || return 1
		bloom_module_args=(--loadmodule "$mod")
		export BLOOM_REDIS_BF=1
		;;
	*)
		echo "start-redis: BLOOM_REDIS_BF=$BLOOM_REDIS_BF: want 1, 0 or unset" >&2
		return 1
		;;
	esac
}

# bloom_check_bf checks that the server on port $1 has the BF.* commands
# if BLOOM_REDIS_BF=1 and lacks them if 0.
bloom_check_bf() {
	local info
	info=$(redis-cli -p "$1" command info BF.LOADCHUNK BF.SCANDUMP 2>&1)
	if [ "$BLOOM_REDIS_BF" = 1 ] && ! printf '%s' "$info" | grep -qi 'bf.scandump'; then
		echo "start-redis: the server on port $1 has no BF.* commands although the module was loaded" >&2
		return 1
	fi
	if [ "$BLOOM_REDIS_BF" = 0 ] && printf '%s' "$info" | grep -qi 'bf.scandump'; then
		echo "start-redis: BLOOM_REDIS_BF=0, but the server on port $1 has BF.* commands" >&2
		return 1
	fi
}
