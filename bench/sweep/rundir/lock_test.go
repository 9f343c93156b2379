package rundir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOneRunPerDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run")
	first, err := Open(path, "", false, time.Now())
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(path, LockFile))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b))

	for _, force := range []bool{false, true} {
		_, err = Open(path, "", force, time.Now())
		require.ErrorIs(t, err, ErrLocked, "force=%v", force)
		require.ErrorContains(t, err, "pid "+strconv.Itoa(os.Getpid()))
	}
	held, err := Results(path)
	require.NoError(t, err)
	require.Empty(t, held, "the lock is not a result")

	// Positive control: released, the directory opens again.
	require.NoError(t, first.Close())
	require.NoError(t, first.Close())
	require.NoFileExists(t, filepath.Join(path, LockFile))
	second, err := Open(path, "", false, time.Now())
	require.NoError(t, err)
	require.Empty(t, second.Warning)
	require.NoError(t, second.Close())
}

func TestStaleLockIsTakenOver(t *testing.T) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := cmd.Process.Pid
	require.False(t, alive(dead))

	for name, holder := range map[string]string{"dead pid": strconv.Itoa(dead), "garbage": "not a pid"} {
		t.Run(name, func(t *testing.T) {
			path := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(path, LockFile), []byte(holder+"\n"), 0o644))
			held, err := Results(path)
			require.NoError(t, err)
			require.Empty(t, held, "a stale lock alone is not results")
			d, err := Named(path, false)
			require.NoError(t, err)
			require.Contains(t, d.Warning, "stale lock")
			_, err = Named(path, true)
			require.ErrorIs(t, err, ErrLocked, "now held by this process")
			require.NoError(t, d.Close())
		})
	}
}

func TestSubIsCoveredByTheParentsLock(t *testing.T) {
	d, err := Named(t.TempDir(), false)
	require.NoError(t, err)
	defer d.Close()
	sub, err := d.Sub("baseline")
	require.NoError(t, err)
	require.NoFileExists(t, sub.File(LockFile))
	require.NoError(t, sub.Close())
	require.FileExists(t, d.File(LockFile))
}
