package target

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The stop removedOnExit returns terminates once, however often it is
// called (the close path and the second Ctrl-C may both reach it).
func TestRemovedOnExitTerminatesOnce(t *testing.T) {
	n := 0
	stop := removedOnExit(func(context.Context) error { n++; return nil })
	require.NoError(t, stop())
	require.NoError(t, stop())
	require.Equal(t, 1, n)
}
