package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.stdout and *.stderr goldens")

// tv names a typevet receipt copied into receipts/typevet/testdata.
func tv(name string) string { return "../../receipts/typevet/testdata/" + name }

// run runs one command line with buffers and a fake exec that fails (no
// subprocess unless a test installs one).
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb,
		exec: func(context.Context, []string, io.Writer, io.Writer, string, ...string) error {
			return os.ErrNotExist
		}}
	code = vetbench(context.Background(), e, args)
	return out.String(), errb.String(), code
}

// TestGoldenCLI compares stdout and stderr with testdata/<name>.stdout and
// .stderr (a missing file means empty). -update rewrites them, only when
// they differ, and never under CI=true.
func TestGoldenCLI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"compare_checks", []string{"compare", tv("check_match_vllm_receipt.json"), tv("check_match_vllm_throughput_full_c16.json")}, exitFail},
		{"compare_checks_json", []string{"compare", "-json", tv("check_match_vllm_receipt.json"), tv("check_match_vllm_throughput_full_c16.json")}, exitFail},
		{"compare_faces", []string{"compare", tv("face_match_vllm_receipt.json"), tv("face_match_vllm_throughput_full_c16.json")}, exitFail},
		{"compare_signatures_c16_c32", []string{"compare", tv("signature_match_vllm_throughput_full_c16.json"), tv("signature_match_vllm_throughput_full_c32.json")}, exitPass},
		{"compare_signatures_strict", []string{"compare", "-policy", "strict", tv("signature_match_vllm_throughput_full_c16.json"), tv("signature_match_vllm_throughput_full_c32.json")}, exitFail},
		{"compare_signatures_subset", []string{"compare", tv("signature_match_vllm_throughput_c1.json"), tv("signature_match_vllm_throughput_full_c16.json")}, exitNoVerdict},
		{"compare_signatures_subset_drift", []string{"compare", "-allow-identity-drift", tv("signature_match_vllm_throughput_c1.json"), tv("signature_match_vllm_throughput_full_c16.json")}, exitFail},
		{"compare_missing_file", []string{"compare", "testdata/nope.json", tv("check_match_vllm_receipt.json")}, exitNoVerdict},
		// -json never leaves stdout empty: a failure is an error object.
		{"compare_signatures_subset_json", []string{"compare", "-json", tv("signature_match_vllm_throughput_c1.json"), tv("signature_match_vllm_throughput_full_c16.json")}, exitNoVerdict},
		{"compare_missing_file_json", []string{"compare", "testdata/nope.json", tv("check_match_vllm_receipt.json"), "-json"}, exitNoVerdict},
		{"compare_bad_flag_json", []string{"compare", "-json", "-near-tie", "x", "a", "b"}, exitNoVerdict},
		{"unknown_command", []string{"frobnicate"}, exitNoVerdict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, c.args...)
			require.Equal(t, c.code, code, "stderr: %s", stderr)
			checkGolden(t, filepath.Join("testdata", c.name+".stdout"), stdout)
			checkGolden(t, filepath.Join("testdata", c.name+".stderr"), stderr)
		})
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if string(want) == got {
		return
	}
	if *update {
		if os.Getenv("CI") == "true" {
			t.Fatalf("refusing -update under CI=true (%s differs)", path)
		}
		if got == "" {
			require.NoError(t, os.Remove(path))
			return
		}
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	require.NoError(t, os.WriteFile(strings.TrimSuffix(path, filepath.Ext(path))+".got-"+strings.TrimPrefix(filepath.Ext(path), "."), []byte(got), 0o644))
	require.Equal(t, string(want), got, "%s differs (run go test -update to accept)", path)
}
