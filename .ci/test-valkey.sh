#!/usr/bin/env bash
# test-valkey.sh runs redisbloom's and collystorage's Redis tests against
# Valkey 8.0.1 (../shared/valkey/valkey-server): a single server and a
# 3-master Cluster started by start-valkey.sh, and Valkey again for the
# private servers tests start (redis-server on PATH is Valkey here). With
# -short: the Redis run of .ci/run covers the statistical tests in full.
# Valkey has no BF.* commands (the RedisBloom module does not load into it),
# so BLOOM_REDIS_BF=0: the NativeFilter tests skip, saying so, and
# TestNativeWithoutModule checks the error instead.
#
# Run it from anywhere, after start-redis.sh installed redis-cli; it stops
# its servers on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=start-valkey.sh
. .ci/start-valkey.sh
export BLOOM_REDIS_ADDR=$BLOOM_VALKEY_ADDR BLOOM_REDIS_CLUSTER_ADDRS=$BLOOM_VALKEY_CLUSTER_ADDRS BLOOM_REDIS_BF=0
export PATH="$BLOOM_VALKEY_PATH:$PATH"
redis-server --version | grep -q '^Valkey' || { echo "test-valkey: redis-server on PATH is not Valkey"; exit 1; }
failed=
for m in redisbloom collystorage; do
	echo "test-valkey: $m: go test -short ./... against Valkey"
	(cd "$m" && go test -short -count=1 ./...) || failed="$failed $m"
done
if [ -n "$failed" ]; then
	echo "test-valkey: failed against Valkey:$failed"
	exit 1
fi
