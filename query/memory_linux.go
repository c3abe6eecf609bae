package query

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// availableMemory is the memory the process may use: the machine's
// physical memory, or its cgroup's limit (cgroup v2 memory.max) when
// lower; 0 when unknown.
func availableMemory() int64 {
	var info syscall.Sysinfo_t
	var phys int64
	if syscall.Sysinfo(&info) == nil {
		phys = int64(info.Totalram) * int64(info.Unit)
	}
	if data, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 && (phys == 0 || n < phys) {
			return n
		}
	}
	return phys
}
