package grid_test

import (
	"fmt"

	"github.com/vetbench/vetbench/bench/grid"
)

// A cell's status from what it saw: here 16 streams asked, 2 waiting in
// one of three readings.
func ExampleClassify() {
	occ := grid.Occupy([]grid.Gauges{{Running: 16, OK: true}, {Running: 14, Waiting: 2, OK: true}, {Running: 16, OK: true}})
	status, why := grid.Classify(grid.Outcome{C: 16, Occupancy: occ})
	fmt.Println(status.Label()+":", why)
	fmt.Println(grid.SkipReason(64, 131072, 4096, 375296, 0))
	// Output:
	// Requests queued: requests waited in 1 of 3 readings (up to 2)
	// C × (context + output) = 64 × (131072 + 4096) = 8650752 tokens exceeds the KV cache of 375296 tokens (vllm:cache_config_info num_gpu_blocks × block_size)
}
