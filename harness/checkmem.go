package harness

import "github.com/fencecheck/fencecheck/internal/meminfo"

// MinCheckMemory is the smallest --check-memory accepted.
const MinCheckMemory = 64 << 20

// DefaultCheckMemory is the memory bound a check gets unless told
// otherwise: half of what the machine (or the container's memory limit,
// when lower) has, so a check never takes the machine down, and at least
// 1 GiB when the machine cannot say.
func DefaultCheckMemory() int64 {
	total, _ := meminfo.Field("MemTotal") // 0 when it cannot say
	if l := meminfo.CgroupLimit(); l > 0 && (total == 0 || l < total) {
		total = l
	}
	if total == 0 {
		return 1 << 30
	}
	return max(total/2, MinCheckMemory)
}
