package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// memoryLimit returns the physical memory in bytes, from /proc/meminfo, or
// the cgroup v2 memory limit of the process (a container's) if that is
// lower, and says which it is.
func memoryLimit() (bytes uint64, source string, ok bool) {
	if total, ok := memTotal(); ok {
		bytes, source = total, "physical memory"
	}
	if limit, ok := cgroupLimit(); ok && (source == "" || limit < bytes) {
		bytes, source = limit, "cgroup memory limit"
	}
	return bytes, source, source != ""
}

// memTotal reads MemTotal from /proc/meminfo.
func memTotal() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "MemTotal:       24683652 kB"
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		return kb * 1024, err == nil && kb > 0
	}
	return 0, false
}

// cgroupLimit returns the memory limit of the process's cgroup, v2
// (memory.max) or v1 (memory.limit_in_bytes), if it has one. A cgroup
// namespace, as in a container, shows the process's own cgroup at the root
// of /sys/fs/cgroup, so the root is tried after the path /proc names.
func cgroupLimit() (uint64, bool) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	var files []string
	for _, line := range strings.Split(string(self), "\n") {
		// "0::/PATH" for v2, "N:memory:/PATH" for v1.
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			files = append(files, "/sys/fs/cgroup"+path+"/memory.max", "/sys/fs/cgroup/memory.max")
		}
		if _, rest, ok := strings.Cut(line, ":memory:"); ok {
			files = append(files, "/sys/fs/cgroup/memory"+rest+"/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
		}
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		// "max" (v2) means no limit; v1 shows it as a number near 2^63.
		n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
		return n, err == nil && n > 0
	}
	return 0, false
}
