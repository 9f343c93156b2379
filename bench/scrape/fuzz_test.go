package scrape

import (
	"strings"
	"testing"
	"time"
)

// FuzzDiff feeds arbitrary after-pages against the real before-page: Diff and
// CacheConfig must never panic, and a status must always be set. Seeds run in
// every `go test`; `go test -fuzz FuzzDiff` explores further.
func FuzzDiff(f *testing.F) {
	f.Add(page(f, afterPage))
	f.Add("# TYPE vllm:e2e_request_latency_seconds histogram\nvllm:e2e_request_latency_seconds_count 3\n")
	f.Add("vllm:prompt_tokens_total NaN\nvllm:prompt_tokens_created +Inf\n")
	f.Add("# TYPE vllm:request_queue_time_seconds histogram\nvllm:request_queue_time_seconds_bucket{le=\"+Inf\"} 2\nvllm:request_queue_time_seconds_count 1\nvllm:request_queue_time_seconds_sum 1\n")
	before := snap(f, page(f, beforePage))
	f.Fuzz(func(t *testing.T, text string) {
		after, err := FromText(strings.NewReader(text), time.Unix(0, 0))
		if err != nil && after.Err == nil {
			t.Fatal("a failed parse must be carried by the snapshot")
		}
		srv := Diff(before, after)
		if srv.Status == "" {
			t.Fatal("empty status")
		}
		_ = CacheConfig(after)
	})
}
