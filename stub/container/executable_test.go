package container_test

import (
	"debug/elf"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/vetbench/vetbench/stub/container"
)

// dynamicELF is a dynamically linked executable of this machine (the
// shell), or a skip where there is none.
func dynamicELF(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/true"} {
		if err := container.StaticELF(p); err != nil {
			if f, ferr := elf.Open(p); ferr == nil {
				f.Close()
				return p
			}
		}
	}
	t.Skip("no dynamically linked ELF executable on this machine")
	return ""
}

// patched is a copy of the static test binary with its ELF bytes changed
// by edit (given the file's header and the copy's bytes).
func patched(t *testing.T, edit func(f *elf.File, b []byte)) string {
	t.Helper()
	data, err := os.ReadFile(binary)
	require.NoError(t, err)
	f, err := elf.Open(binary)
	require.NoError(t, err)
	defer f.Close()
	edit(f, data)
	path := filepath.Join(t.TempDir(), "vllmstub")
	require.NoError(t, os.WriteFile(path, data, 0o755))
	return path
}

// StaticELF accepts the CGO_ENABLED=0 build and refuses what a FROM
// scratch image cannot run; each refusal is shown on a real or mutated
// file, so a check that stopped looking would fail here.
func TestStaticELF(t *testing.T) {
	require.NoError(t, container.StaticELF(binary), "CGO_ENABLED=0 go build")
	require.ErrorContains(t, container.StaticELF(dynamicELF(t)), "is dynamically linked (interpreter /")
	require.ErrorContains(t, container.StaticELF("Dockerfile"), "is not an ELF executable")
	require.ErrorContains(t, container.StaticELF(filepath.Join(t.TempDir(), "none")), "is not an ELF executable")

	// The static binary with one program header turned into PT_INTERP: the
	// check reads the headers, not a name or a size.
	interp := patched(t, func(f *elf.File, b []byte) {
		phoff := le(b[32:40])
		for i, p := range f.Progs {
			if p.Type == elf.PT_NOTE {
				putLE(b[phoff+uint64(i)*56:], uint64(elf.PT_INTERP), 4)
				return
			}
		}
		t.Fatal("no PT_NOTE program header to mutate")
	})
	require.ErrorContains(t, container.StaticELF(interp), "is dynamically linked")

	// Another machine's ELF (e_machine at byte 18).
	other := patched(t, func(f *elf.File, b []byte) {
		m := elf.EM_AARCH64
		if f.Machine == elf.EM_AARCH64 {
			m = elf.EM_X86_64
		}
		putLE(b[18:], uint64(m), 2)
	})
	require.ErrorContains(t, container.StaticELF(other), "not this machine's")
}

// le reads a little-endian integer (ELF64 LSB, the test binary's format).
func le(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// putLE writes the n low bytes of v little-endian.
func putLE(b []byte, v uint64, n int) {
	for i := range n {
		b[i] = byte(v >> (8 * i))
	}
}

// WithExecutable builds the image from another executable, run with the
// given arguments before the twin's flags: here the static vllmstub under
// another name, whose argument is the model it serves (vllmstub MODEL), so
// the served name shows the arguments arrived in order. It is the path an
// installed vetbench takes with its own executable and "twin".
func TestRunWithExecutable(t *testing.T) {
	requireDocker(t)
	exe := filepath.Join(t.TempDir(), "twin-exe")
	data, err := os.ReadFile(binary)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, data, 0o755))
	ctr, err := container.Run(t.Context(), container.WithExecutable(exe, "org/boxed-model"))
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	url, err := ctr.BaseURL(t.Context())
	require.NoError(t, err)
	res, err := http.Get(url + "/v1/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(body), `"id":"org/boxed-model"`)
	inspect, err := exec.Command("docker", "inspect", "-f", "{{json .Config.Entrypoint}}", ctr.GetContainerID()).Output()
	require.NoError(t, err)
	require.JSONEq(t, `["/twin-exe","org/boxed-model","--host","0.0.0.0","--port","8000"]`, string(inspect))
}
