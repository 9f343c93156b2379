package judgments_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
)

// vLLM's image-limit 400s, wrapped as callers wrap them, read as a limit
// and whether a flag raises it; any other 400 or status is not one.
func TestImageLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		limit    int
		raisable bool
		ok       bool
	}{
		{"text-only model", &judgments.StatusError{Code: 400, Param: "image", Message: "At most 0 image(s) may be provided in one prompt."}, 0, false, true},
		{"the flag's limit", fmt.Errorf("item 1: %w", &judgments.StatusError{Code: 400, Param: "image",
			Message: "At most 2 image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit."}), 2, true, true},
		{"another 400", &judgments.StatusError{Code: 400, Message: "max_tokens must be at least 1"}, 0, false, false},
		{"a 500 with the words", &judgments.StatusError{Code: 500, Message: "At most 0 image(s) may be provided in one prompt."}, 0, false, false},
		{"videos", &judgments.StatusError{Code: 400, Message: "At most 0 video(s) may be provided in one prompt."}, 0, false, false},
		{"not a status", errors.New("At most 0 image(s) may be provided in one prompt."), 0, false, false},
	} {
		limit, raisable, ok := judgments.ImageLimit(tc.err)
		require.Equal(t, [3]any{tc.limit, tc.raisable, tc.ok}, [3]any{limit, raisable, ok}, tc.name)
	}
}
