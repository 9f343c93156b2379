package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// instructions are a Dockerfile's lines less comments and blanks.
func instructions(df []byte) []string {
	var out []string
	for _, l := range strings.Split(string(df), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// Another executable's Dockerfile is the embedded one's with its COPY and
// ENTRYPOINT: still FROM scratch, still an unprivileged user.
func TestDockerfileFor(t *testing.T) {
	require.Equal(t, dockerfile, dockerfileFor("vllmstub", nil), "vllmstub's is the file itself")
	require.Equal(t, []string{
		"FROM scratch",
		"COPY vetbench /vetbench",
		"USER 65534:65534",
		`ENTRYPOINT ["/vetbench","twin","--host","0.0.0.0","--port","8000"]`,
	}, instructions(dockerfileFor("vetbench", []string{"twin"})))
	require.Equal(t, instructions(dockerfile), instructions(dockerfileFor("vllmstub", []string{})), "the same instructions for vllmstub by another road")
	require.Equal(t, "twin", imageName("/tmp/x/vet bench"))
	require.Equal(t, "twin", imageName("/tmp/x/Dockerfile"))
	require.Equal(t, "vetbench", imageName("/go/bin/vetbench"))
}

// WithOwnExecutable in a program whose executable cannot be the image (a
// cgo-linked test binary) and outside any module says both reasons, so an
// installed binary's user reads why the container twin did not start.
func TestOwnExecutableNeitherSaysWhy(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	if StaticELF(exe) == nil {
		t.Skip("this test binary is static (CGO_ENABLED=0): it would be the image")
	}
	t.Chdir(t.TempDir())
	var o options
	require.NoError(t, WithOwnExecutable("twin")(&o))
	dir := t.TempDir()
	_, _, err = o.placeExecutable(t.Context(), dir)
	require.ErrorContains(t, err, "this program's executable cannot be the image: "+exe+" is dynamically linked")
	require.ErrorContains(t, err, "not inside a Go module")
	require.NoFileExists(t, filepath.Join(dir, "vllmstub"))
}
